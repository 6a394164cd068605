// gnuplot as a subprocess (see plot_gnuplot.h).
#include "study/summary/internal/plot_gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace slowpipe::study {
namespace {

// Okabe-Ito's colour-blind-safe set (yellow replaced by olive), then darker
// and further hues; no grey (the legend's style keys are grey).
constexpr const char* kColours[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                    "#56b4e9", "#000000", "#999933", "#8c564b", "#9467bd",
                                    "#17becf", "#8b0000", "#006400", "#00008b", "#b8860b"};

}  // namespace

std::string gp_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\n') {
      out += "'.\"\\n\".'";  // a line break: 'a'."\n".'b' (a string expression)
    } else {
      out += c == '\'' ? std::string("''") : std::string(1, c);
    }
  }
  return out + "'";
}

std::string gp_preamble(const std::string& png, const std::string& title) {
  const std::string size = std::to_string(kPngWidthPx) + "," + std::to_string(kPngHeightPx);
  return "# Written by `slowpipe plot`; edit and rerun with: gnuplot " +
         png.substr(0, png.size() - 4) +
         ".gp\n"
         "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
         "  set terminal pngcairo size " +
         size +
         " font 'sans,11'\n"
         "} else {\n"
         "  set terminal png size " +
         size +
         "\n"
         "}\n"
         "set output " +
         gp_quote(png) +
         "\n"
         "set datafile separator '\\t'\n"
         "set datafile missing 'nan'\n"
         "set title " +
         gp_quote(title) +
         " noenhanced\n"
         "set grid\n"
         "set key outside right top noenhanced Left reverse\n";
}

std::string gp_colour(size_t i) {
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

void run_gnuplot(const std::string& folder, const std::string& script) {
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(pipe_fd[0]);
    dup2(pipe_fd[1], STDERR_FILENO);
    dup2(pipe_fd[1], STDOUT_FILENO);
    if (chdir(folder.c_str()) != 0) _exit(126);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    const char msg[] = "cannot start gnuplot (install the Debian package gnuplot-nox)\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  close(pipe_fd[1]);
  std::string messages;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fd[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    messages.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  while (!messages.empty() && messages.back() == '\n') messages.pop_back();
  throw std::runtime_error("gnuplot failed on " + folder + "/" + script +
                           (messages.empty() ? std::string() : ":\n" + messages));
}

}  // namespace slowpipe::study
