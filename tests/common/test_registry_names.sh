#!/usr/bin/env bash
# Registries own their names (docs/codec-spec.md, "Adding a codec";
# docs/models.md, "Adding a model"): no library source outside a registry
# compares a name, codec, model or scheme variable with a registered codec,
# feedback-scheme, model, data-set or optimizer name
# (`model == "gpt"`, `stage.name == "topk"`, `"none" != codec`), nor tests a
# spec's text for a scheme (`spec.rfind("aq(", 0) == 0`, `starts_with("ef(")`,
# `.substr(0, 3) == "aq("`, `find("aq(")`: any literal "SCHEME("). Such a
# switch is a property that belongs in the family's registry entry: a new
# entry would silently miss it. The names are the registries' own, printed by
# REGISTRY_NAMES (tests/common/registry_names.cpp), not a hand-kept list; a
# name also matches with digits after it (the codec entry "q" is q1..q8).
# Usage: test_registry_names.sh SOURCE_DIR REGISTRY_NAMES
#
# Precise rather than complete: option values that share a codec's name
# (`v == "fp16"` for PowerSGD's value precision) do not match, nor do whole
# specs (`spec == "none"`, `"aq(q2)"`), which are values of a config key, not
# names. Tests, benchmarks and fuzzers may name what they test.
set -u
src=${1:?usage: test_registry_names.sh SOURCE_DIR REGISTRY_NAMES}
lister=${2:?usage: test_registry_names.sh SOURCE_DIR REGISTRY_NAMES}
listed=$("$lister") || { echo "FAIL: $lister did not run"; exit 1; }
# Every family answered, with its built-ins.
for must in "codec none" "codec q" "codec topk" "scheme direct" "scheme aq" "model gpt" \
  "data text" "optimizer sgd" "optimizer adamw"; do
  if ! printf '%s\n' "$listed" | grep -qxF "$must"; then
    echo "FAIL: $lister does not list '$must'"
    exit 1
  fi
done
# The names of FAMILY (all families when empty) as one alternation, regex
# characters escaped.
alternation() {
  printf '%s\n' "$listed" | awk -v f="$1" 'f == "" || $1 == f { print $2 }' |
    sed -e 's/[][\.*^$+?(){}|]/\\&/g' | paste -sd'|' -
}
names="($(alternation ""))[0-9]*"
schemes="($(alternation scheme))"
var='[A-Za-z_.>-]*\b(name|codec|model|scheme)(\(\))?'
pattern="${var}[[:space:]]*[!=]=[[:space:]]*\"${names}\"|\"${names}\"[[:space:]]*[!=]=[[:space:]]*${var}"
# A scheme's opening as a literal: the prefix test of a spec's text.
pattern="${pattern}|\"${schemes}\\(\""
# The registries themselves, where each name is defined.
registries='^(config/optim_registry\.cpp|models/facts/data_facts\.cpp|compressors/codecs/codec\.cpp|compressors/codecs/channel_spec\.cpp|models/torch/model_registry\.cpp|models/facts/model_facts\.cpp|models/torch/data_registry\.cpp):'

# Controls: the pattern finds the switches it exists to catch, and passes a
# comparison of an option value, a whole spec and a scheme read from a tree.
for bad in 'if (model == "gpt") {' '  } else if (stage.name == "fp16" || x) {' \
  'const bool u = spec.codec == "none";' 'if ("topk" != s.name)' 'return tree.scheme == "aq";' \
  'if (codec == "q4")' 'if (data.name == "fashion-mnist")' \
  'return spec.rfind("aq(", 0) == 0;' 'if (spec.substr(0, 3) == "aq(")' \
  'if (text.starts_with("ef21("))' 'return spec.find("aq(") != std::string::npos;'; do
  if ! printf '%s\n' "$bad" | grep -qE "$pattern"; then
    echo "FAIL: the pattern misses: $bad"
    exit 1
  fi
done
for good in 'else if (v == "fp16") {' 'c.fw = "aq(q2)";' 'return tree.scheme + "(" + codec + ")";'; do
  if printf '%s\n' "$good" | grep -qE "$pattern"; then
    echo "FAIL: the pattern flags: $good"
    exit 1
  fi
done

cd "$src" || exit 1
hits=$(grep -rnE "$pattern" --include='*.cpp' --include='*.h' \
  common pipeline compressors models netmodel whatif runlog config sim study distributed cli | grep -vE "$registries")
if [ -n "$hits" ]; then
  echo "FAIL: family names switched on outside their registry (move the property into the entry):"
  echo "$hits"
  exit 1
fi
echo "ok: no family-name switch outside the registries"
