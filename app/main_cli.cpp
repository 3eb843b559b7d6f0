// ampstudio-cli: the headless front end (run, bench, compare, convert, export).
#include "app/cli_main.h"

int main(int argc, char** argv) { return amp::cli::cliMain(argc, argv); }
