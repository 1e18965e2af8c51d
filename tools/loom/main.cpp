// SPDX-License-Identifier: Apache-2.0
// The `loom` command-line program: the subcommands on a CLI11 app (commands.h), and errors turned
// into exit codes (1 user error, bad command lines and unwritable output included; 2 internal
// error; 3 unavailable).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/options.h"
#include "loom/version.h"
#include "tools/loom/commands.h"

namespace {

// The subcommand the command line selected, or the app itself.
const CLI::App* selected(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

std::string commandName(const CLI::App& app, const CLI::App* cmd) {
  return cmd == &app ? "loom" : "loom " + cmd->get_name();
}

// A bad command line: what is wrong, in CLI11's words or ours, and where the options are listed.
int usageError(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* cmd = selected(app);
  const std::string name = commandName(app, cmd);
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // One line per argument nobody took: an unknown option, or one positional too many.
    what.clear();
    std::vector<std::string> extras = cmd->remaining();
    if (extras.empty()) extras = app.remaining();
    for (const std::string& x : extras) {
      if (!what.empty()) what += "; ";
      what += x.size() > 1 && x[0] == '-'
                  ? fmt::format("unknown option '{}' for {}", x, name)
                  : fmt::format("unexpected argument '{}' ({} takes one file)", x, name);
    }
    if (what.empty()) what = e.what();
  }
  std::cerr << "loom: error: " << what << "\n"
            << "Run '" << name << " --help' for the options.\n";
  return 1;
}

// Flushes standard output and reports output that did not reach it (a full disk, /dev/full): the
// stream buffers, so a failed write shows only here, and a command whose output was lost has
// failed whatever it returned.
int finishOutput(int rc) {
  // std::cout writes through stdout (synced with stdio), so its flush is the one that fails and
  // sets errno; a second flush then has nothing left to write.
  errno = 0;
  std::cout.flush();
  const bool flushFailed = std::fflush(stdout) != 0 || std::cout.fail();
  const int err = errno;
  if (!flushFailed && std::ferror(stdout) == 0) return rc;
  std::cerr << "loom: error: cannot write to standard output"
            << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
  return rc != 0 ? rc : 1;
}

// What bare `loom` prints: the commands on one line and where the rest is.
std::string shortUsage(const CLI::App& app) {
  std::string commands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden
    if (!commands.empty()) commands += ", ";
    commands += sub->get_name();
  }
  std::string usage = "Usage: loom COMMAND [OPTIONS] [FILE.fus]\n";
  usage += "Commands: " + commands + "\n";
  usage +=
      "Run 'loom --help' for what each does, the exit statuses and the environment variables, "
      "'loom COMMAND --help' for a command's options.\n";
  return usage;
}

int runCommandLine(int argc, char** argv) {
  CLI::App app(
      "Loom: a fusion compiler for NVIDIA GPUs, with a host backend that runs the same kernels "
      "on the CPU.",
      "loom");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION_STRING,
                       "print the Loom version and exit");
  app.footer([] { return loom::tools::environmentHelp(); });
  app.get_formatter()->column_width(30);

  std::vector<loom::tools::Command> commands = {
      loom::tools::addPrintCommand(app), loom::tools::addEvalCommand(app),
      loom::tools::addCodegenCommand(app), loom::tools::addRunCommand(app),
      loom::tools::addGenExamplesCommand(app)};
  CLI::App* version = app.add_subcommand("version", "print the Loom version");
  CLI::App* help = app.add_subcommand("help", "print this message, or a command's help");
  std::string help_topic;
  help->add_option("COMMAND", help_topic, "the command whose help to print")->type_name("");

  if (argc <= 1) {
    std::cerr << shortUsage(app);
    return 1;
  }
  if (const std::string first = argv[1]; !first.empty() && first[0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == first;
    if (!known) {
      std::cerr << "loom: error: unknown command '" << first << "'\n"
                << "Run 'loom --help' for the commands.\n";
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    return usageError(app, e);
  }

  try {
    // LOOM_DUMP and LOOM_DEBUG are read now, so that a bad name fails before any work and
    // LOOM_DUMP=help prints the names first.
    (void)loom::DumpOptions::fromEnvironment();
    (void)loom::DebugOptions::fromEnvironment();
    if (version->parsed()) {
      std::cout << "loom " << LOOM_VERSION_STRING << "\n";
      return 0;
    }
    if (help->parsed()) {
      if (help_topic.empty()) {
        // app.help() would describe the selected subcommand, `help` itself.
        std::cout << app.get_formatter()->make_help(&app, "loom", CLI::AppFormatMode::Normal);
        return 0;
      }
      for (const loom::tools::Command& c : commands) {
        if (c.app->get_name() == help_topic) {
          std::cout << c.app->help("loom");
          return 0;
        }
      }
      LOOM_THROW("unknown command '", help_topic, "'; 'loom --help' lists the commands");
    }
    for (const loom::tools::Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    LOOM_THROW("no command given; 'loom --help' lists the commands");
  } catch (const loom::UserError& e) {
    std::cerr << "loom: error: " << e.message() << "\n";
    return 1;
  } catch (const loom::UnavailableError& e) {
    // Not a bug: what was asked for needs something this machine lacks (no GPU, no driver).
    std::cerr << "loom: unavailable: " << e.message() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "loom: internal error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) { return finishOutput(runCommandLine(argc, argv)); }
