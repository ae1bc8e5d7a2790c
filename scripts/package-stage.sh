#!/usr/bin/env bash
# Lays out what the packages carry beside the units, from the binary itself
# (`make man`; `make deb` and `make rpm` use it): the binary, its manual pages (gzipped), the
# bash/zsh/fish completions and the default config, in STAGE (packaging/stage).
# Usage: scripts/package-stage.sh FIXSCOPE_BIN STAGE
set -euo pipefail
bin=${1:?usage: package-stage.sh FIXSCOPE_BIN STAGE}
stage=${2:?usage: package-stage.sh FIXSCOPE_BIN STAGE}
root="$(cd "$(dirname "$0")/.." && pwd)"
[ -x "$bin" ] || { # The Debian changelog the .deb needs: this version, dated by the last commit (the same
# tree gives the same file).
version=$("$bin" --version | awk '{print $2}')
when=$(git -C "$root" log -1 --format=%cD 2>/dev/null || date -R)
cat > "$stage/changelog" <<CHANGELOG
fixscope ($version-1) unstable; urgency=medium

  * Release $version: see /usr/share/doc/fixscope/README.md.

 -- The fixscope developers <fixscope@users.noreply.github.com>  $when
CHANGELOG
echo "package-stage: $bin is not an executable (FIXSCOPE_BIN)" >&2; exit 1; }
rm -rf "$stage"
mkdir -p "$stage/man" "$stage/completions"
install -m 0755 "$bin" "$stage/fixscope"
# Packages carry no debug information (lintian: unstripped-binary-or-object).
strip --strip-unneeded "$stage/fixscope"
"$bin" manpages "$stage/man"
# -n: no name or time in the gzip header, so the same pages give the same bytes.
gzip -9n "$stage"/man/*.1
"$bin" completions bash > "$stage/completions/fixscope"
"$bin" completions zsh > "$stage/completions/_fixscope"
"$bin" completions fish > "$stage/completions/fixscope.fish"
# The config the config work commits (`fixscope config example`); a placeholder until then.
install -m 0644 "$root/packaging/fixscope.toml" "$stage/fixscope.toml"
# The Debian changelog the .deb needs: this version, dated by the last commit (the same
# tree gives the same file).
version=$("$bin" --version | awk '{print $2}')
when=$(git -C "$root" log -1 --format=%cD 2>/dev/null || date -R)
cat > "$stage/changelog" <<CHANGELOG
fixscope ($version-1) unstable; urgency=medium

  * Release $version: see /usr/share/doc/fixscope/README.md.

 -- The fixscope developers <fixscope@users.noreply.github.com>  $when
CHANGELOG
echo "package-stage: $(ls "$stage/man" | wc -l) manual pages, 3 completions, the config in $stage"
