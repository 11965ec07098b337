#!/usr/bin/env bash
# Writes docs/CLI.md from the built assetpack's own help (make cli-doc). CLIReferenceTests checks
# that every subcommand's `--help` appears in it verbatim, so it cannot drift from the parser.
# Usage: scripts/cli-doc.sh PATH/TO/assetpack > docs/CLI.md
set -euo pipefail
bin=$1
subcommands=$(COLUMNS=100 "$bin" --help | awk '/^SUBCOMMANDS:/ {on=1; next} on && /^  [a-z]/ {print $1}')
cat <<'HEAD'
# The `assetpack` command line

Generated from the parser's own help by `make cli-doc` (scripts/cli-doc.sh); a test fails when a
subcommand's `--help` is not here verbatim. For what the commands are for, start with the README.

Passwords and keys never go on the command line: `$ASSETPACK_PASSWORD` (or `--password-env NAME`),
`$ASSETPACK_PASSWORD_FILE` (or `--password-file PATH`), `$ASSETPACK_KEY_FILE` (or `--key-file PATH`,
a container's raw 32-byte key), or a prompt on a terminal. The environment is read in that order of
preference when no option names a source: key file, password file, password — as the `PackAssets`
plugin reads it.

## Exit codes

| code | meaning |
|---|---|
| 0 | success |
| 1 | any other error (I/O, an invalid argument, an unsupported pack) |
| 2 | missing or wrong password or key |
| 3 | entry not found |
| 4 | integrity failure: CRC, MAC or tag, a corrupt or truncated pack |
| 5 | untrusted: `--trust` given and the pack is not signed by one of those keys, or differs from what was signed; a release's pack that is not the one its manifest names, or an older release |
| 6 | remote: a URL's server failed, ignores `Range`, changed the file, or broke a deadline or the minimum rate; or libcurl could not be loaded (`ASSETPACK_LIBCURL` names another build of it; docs/REMOTE.md, "Transport") |
| 64 | usage: an unknown option, a missing or malformed value |

## `assetpack`

```text
HEAD
COLUMNS=100 "$bin" --help
echo '```'
for sub in $subcommands; do
  printf '\n## `assetpack %s`\n\n```text\n' "$sub"
  COLUMNS=100 "$bin" "$sub" --help
  echo '```'
done
