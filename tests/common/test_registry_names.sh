#!/usr/bin/env bash
# Registries own their names (docs/codec-spec.md, "Adding a codec";
# docs/models.md, "Adding a model"): no library source outside a registry
# compares a name, codec, model or scheme variable with a built-in codec,
# model, optimizer or feedback-scheme name
# (`model == "gpt"`, `stage.name == "topk"`, `"none" != codec`). Such a switch
# is a property that belongs in the family's registry entry: a new entry would
# silently miss it. Usage: test_registry_names.sh SOURCE_DIR
#
# Precise rather than complete: option values that share a codec's name
# (`v == "fp16"` for PowerSGD's value precision) do not match, nor do whole
# specs (`spec == "none"`), which are values of a config key, not names. Tests,
# benchmarks and fuzzers may name what they test.
set -u
src=${1:?usage: test_registry_names.sh SOURCE_DIR}
names='none|fp16|bf16|q[0-9]*|sign|topk|randk|powersgd|qsgd|tah|gpt|cnn|mlp|sgd|adamw|direct|ef|ef21|aq'
var='[A-Za-z_.>-]*\b(name|codec|model|scheme)(\(\))?'
pattern="${var}[[:space:]]*[!=]=[[:space:]]*\"(${names})\"|\"(${names})\"[[:space:]]*[!=]=[[:space:]]*${var}"
# The registries themselves, where each name is defined.
registries='^(config/optim_registry\.cpp|models/data_facts\.cpp|compressors/codec\.cpp|compressors/channel_spec\.cpp|models/model_registry\.cpp|models/model_facts\.cpp|models/data_registry\.cpp):'

# Controls: the pattern finds the switches it exists to catch, and passes a
# comparison of an option value.
for bad in 'if (model == "gpt") {' '  } else if (stage.name == "fp16" || x) {' \
  'const bool u = spec.codec == "none";' 'if ("topk" != s.name)' 'return tree.scheme == "aq";'; do
  if ! printf '%s\n' "$bad" | grep -qE "$pattern"; then
    echo "FAIL: the pattern misses: $bad"
    exit 1
  fi
done
if printf '%s\n' 'else if (v == "fp16") {' | grep -qE "$pattern"; then
  echo "FAIL: the pattern flags an option value"
  exit 1
fi

cd "$src" || exit 1
hits=$(grep -rnE "$pattern" --include='*.cpp' --include='*.h' \
  common compressors models netmodel whatif runlog config sim study dist cli | grep -vE "$registries")
if [ -n "$hits" ]; then
  echo "FAIL: family names switched on outside their registry (move the property into the entry):"
  echo "$hits"
  exit 1
fi
echo "ok: no family-name switch outside the registries"
