#!/usr/bin/env bash
# Checks the packages `make deb` and `make rpm` wrote into dist/ (`make test-packages`):
# lintian finds no error in the .deb; both carry the right files, the config as a conffile
# (rpm: %config(noreplace)) and no dependency; the .deb installs, leaves its units disabled,
# and purges without leaving a file behind. Installs and purges on this machine: run it
# as root, on a machine (or CI run) where a fixscope package is not otherwise installed.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }
for tool in lintian rpm dpkg-deb; do
    command -v "$tool" >/dev/null || fail "$tool is missing (scripts/install-deps.sh --packaging installs it)"
done
deb=$(ls dist/fixscope_*_amd64.deb 2>/dev/null | tail -1)
rpmf=$(ls dist/fixscope-*.x86_64.rpm 2>/dev/null | tail -1)
[ -n "$deb" ] && [ -n "$rpmf" ] || fail "no packages in dist/: run make deb rpm first"

expected=(
    /usr/bin/fixscope
    /etc/fixscope/fixscope.toml
    /etc/logrotate.d/fixscope
    /usr/lib/systemd/system/fixscope.service
    /usr/lib/systemd/system/fixscope@.service
    /usr/share/bash-completion/completions/fixscope
    /usr/share/zsh/vendor-completions/_fixscope
    /usr/share/fish/vendor_completions.d/fixscope.fish
    /usr/share/man/man1/fixscope.1.gz
    /usr/share/man/man1/fixscope-live.1.gz
    /usr/share/man/man1/fixscope-sim-exchange.1.gz
    /usr/share/doc/fixscope/deploy.md
)

echo "test-packages: lintian $deb"
# Errors fail; warnings are shown (overrides only where justified: none so far).
lintian_out=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' || true)
echo "$lintian_out"
if grep -q '^E: ' <<<"$lintian_out"; then fail "lintian errors"; fi

deb_files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\.##')
for f in "${expected[@]}" /usr/share/doc/fixscope/copyright; do
    grep -qx "$f" <<<"$deb_files" || fail ".deb lacks $f"
done
ctl=$(mktemp -d); dpkg-deb -e "$deb" "$ctl/DEBIAN"
grep -qx /etc/fixscope/fixscope.toml "$ctl/DEBIAN/conffiles" || fail "the config is not a conffile"
if dpkg-deb -f "$deb" Depends | grep -q .; then
    echo "test-packages: note: Depends: $(dpkg-deb -f "$deb" Depends) (the binary is not static: FIXSCOPE_BIN)"
fi
if grep -q "deb-systemd-helper enable\b" "$ctl/DEBIAN/postinst" && ! grep -q "was-enabled" "$ctl/DEBIAN/postinst"; then
    fail "postinst enables the units"
fi
rm -rf "$ctl"

echo "test-packages: rpm -qlp $rpmf"
rpm_files=$(rpm -qlp "$rpmf" 2>/dev/null)
for f in "${expected[@]}" /usr/share/licenses/fixscope/copyright; do
    grep -qx "$f" <<<"$rpm_files" || fail ".rpm lacks $f"
done
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpmf" 2>/dev/null |
    grep -qx 'cn /etc/fixscope/fixscope.toml' || fail "the rpm's config is not %config(noreplace)"
if rpm -qp --requires "$rpmf" 2>/dev/null | grep -v '^rpmlib(\|^/bin/sh$\|^config(fixscope)' | grep -q .; then
    fail "the rpm requires: $(rpm -qp --requires "$rpmf" 2>/dev/null | tr '\n' ' ')"
fi

[ "$(id -u)" -eq 0 ] || fail "installing the .deb needs root"
if dpkg -s fixscope >/dev/null 2>&1; then fail "a fixscope package is installed already: not touching it"; fi
echo "test-packages: dpkg -i, then purge"
dpkg -i "$deb" >/dev/null
installed=$(dpkg -L fixscope)
for f in "${expected[@]}"; do [ -e "$f" ] || fail "installed without $f"; done
/usr/bin/fixscope --version >/dev/null || fail "the installed binary does not run"
if command -v systemctl >/dev/null && systemctl is-enabled fixscope.service 2>/dev/null | grep -qx enabled; then
    fail "fixscope.service was enabled at install"
fi
# What a service leaves at run time, which purge must remove too.
mkdir -p /var/lib/private/fixscope/venue1 /var/log/private/fixscope/venue1
touch /var/lib/private/fixscope/venue1/orders.parquet /var/log/private/fixscope/venue1/venue1.hlog
ln -sfn private/fixscope /var/lib/fixscope
ln -sfn private/fixscope /var/log/fixscope
dpkg --purge fixscope >/dev/null
left=()
while read -r f; do
    [ -z "$f" ] || [ -d "$f" ] && continue
    [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <<<"$installed"
for d in /etc/fixscope /var/lib/fixscope /var/lib/private/fixscope /var/log/fixscope /var/log/private/fixscope; do
    [ -e "$d" ] || [ -L "$d" ] && left+=("$d")
done
[ ${#left[@]} -eq 0 ] || fail "purge left: ${left[*]}"
echo "test-packages: 4 passed, 0 failed"
