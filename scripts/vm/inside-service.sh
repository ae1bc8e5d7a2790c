#!/bin/bash
# Runs inside the service VM (scripts/test-service.sh) as a oneshot unit once the system is
# up, under the real systemd as PID 1: installs the .deb, runs fixscope@test against the
# simulator on lo, and checks what a user of the service sees. Every check prints one
# "ok: …" or "FAIL: …" line on the serial console; the last line is
# "FIXSCOPE-SERVICE-RESULT <failures>", the only one the host trusts. Then powers off.
set -u
export SYSTEMD_PAGER= SYSTEMD_COLORS=0
t=/opt/fixscope-test
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # WHAT COMMAND...
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
    echo "FIXSCOPE-SERVICE-RESULT $failures"
    sync
    systemctl poweroff --no-block
    exit 0
}
echo "== kernel $(uname -r), systemd $(systemctl --version | head -1)"

# 1. The package: installs alone (no dependency), its unit verifies, its conffile is there.
dpkg -i "$t"/fixscope.deb || { fail "dpkg -i"; finish; }
check "the package depends on nothing" test -z "$(dpkg-query -W -f='${Depends}${Pre-Depends}' fixscope)"
check "/etc/fixscope/fixscope.toml is a conffile" dpkg-query -W -f='${Conffiles}' fixscope
dpkg-query -W -f='${Conffiles}\n' fixscope | grep -q /etc/fixscope/fixscope.toml || fail "conffile listed"
check "systemd-analyze verify" systemd-analyze verify fixscope@test.service fixscope.service

# 2. One instance watching the simulator's exchange on lo.
port=19878
systemd-run --quiet --unit=fixscope-exchange /usr/bin/fixscope sim exchange --listen 127.0.0.1:$port ||
    fail "start the simulator's exchange"
cp "$t"/test.toml /etc/fixscope/test.toml
sed -i "s/@PORT@/$port/" /etc/fixscope/test.toml
check "systemctl enable --now fixscope@test" systemctl enable --now fixscope@test.service
for _ in $(seq 1 60); do
    journalctl -u fixscope@test -o cat | grep -q "fixscope: watching" && break
    sleep 1
done
check "fixscope@test is active" systemctl is-active --quiet fixscope@test.service
pid=$(systemctl show -p MainPID --value fixscope@test.service)
echo "== MainPID $pid"
grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/"$pid"/status
uid=$(awk '/^Uid:/ {print $2}' /proc/"$pid"/status)
check "runs as a non-root user (uid $uid)" test "${uid:-0}" -ne 0
eff=$(capsh --decode="$(awk '/^CapEff:/ {print $2}' /proc/"$pid"/status)" | cut -d= -f2)
echo "== effective capabilities: $eff"
check "exactly cap_net_admin,cap_perfmon,cap_bpf" test "$eff" = "cap_net_admin,cap_perfmon,cap_bpf"
bnd=$(capsh --decode="$(awk '/^CapBnd:/ {print $2}' /proc/"$pid"/status)" | cut -d= -f2)
check "bounding set is the same three" test "$bnd" = "cap_net_admin,cap_perfmon,cap_bpf"
check "NoNewPrivs" grep -q '^NoNewPrivs:[[:space:]]*1' /proc/"$pid"/status
systemd-analyze security fixscope@test.service --no-pager | tail -1
check "systemd-analyze security: exposure at most 3.0" \
    sh -c 'systemd-analyze security fixscope@test.service --threshold=30 --no-pager >/dev/null'

orders=1000
check "the simulator's client sends $orders orders" \
    /usr/bin/fixscope sim client --connect 127.0.0.1:$port --count $orders --rate 2000
sleep 3
metrics=$(curl -fsS http://127.0.0.1:9464/metrics)
requests=$(echo "$metrics" | awk '$1 == "fixscope_requests_total" {print $2}')
echo "== /metrics fixscope_requests_total ${requests:-missing}"
check "/metrics counts every order" test "${requests%.*}" = "$orders"

# 3. Stop: the summary in the journal, nothing left attached, state files complete.
check "systemctl stop" systemctl stop fixscope@test.service
journalctl -u fixscope@test -o cat --no-pager | tail -n 30
check "the summary is in the journal" sh -c 'journalctl -u fixscope@test -o cat | grep -q "fixscope summary"'
check "no tc filter left on lo" sh -c '! tc filter show dev lo ingress | grep -q . && ! tc filter show dev lo egress | grep -q .'
check "no BPF program left" sh -c '! bpftool prog show | grep -qi fixscope'
state=/var/lib/private/fixscope/test
logs=/var/log/private/fixscope/test
ls -lR "$state" "$logs" | head -40
check "records in the state directory" sh -c "ls $state/records/orders/*/*.parquet >/dev/null"
check "the hlog reads back (fixscope report)" sh -c "/usr/bin/fixscope report $logs/test.hlog >/dev/null"
mkdir -p /mnt/out && cp -r "$state"/. /mnt/out/ 2>/dev/null

# 4. A drop-in that takes CAP_BPF away: the start fails with one clear line, no libbpf dump.
mkdir -p /etc/systemd/system/fixscope@test.service.d
printf '[Service]\nCapabilityBoundingSet=~CAP_BPF\nAmbientCapabilities=\nAmbientCapabilities=CAP_PERFMON CAP_NET_ADMIN\nRestart=no\n' \
    >/etc/systemd/system/fixscope@test.service.d/no-bpf.conf
systemctl daemon-reload
journalctl --rotate >/dev/null 2>&1
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl start fixscope@test.service 2>/dev/null
sleep 3
check "without CAP_BPF the unit fails" sh -c '! systemctl is-active --quiet fixscope@test.service'
said=$(journalctl -u fixscope@test --since "$since" -o cat --no-pager)
echo "$said" | sed 's/^/   journal: /'
check "one clear line naming CAP_BPF" sh -c "echo \"\$0\" | grep -q CAP_BPF" "$said"
check "no libbpf dump" sh -c "! echo \"\$0\" | grep -q 'libbpf:'" "$said"

# 5. Purge leaves nothing behind.
rm -rf /etc/systemd/system/fixscope@test.service.d /etc/fixscope/test.toml
systemctl disable fixscope@test.service >/dev/null 2>&1
check "dpkg --purge" dpkg --purge fixscope
left=$(find /etc /usr /var/lib /var/log -path '*fixscope*' 2>/dev/null | grep -v fixscope-vm-test || true)
[ -z "$left" ] || echo "$left"
check "purge leaves no file behind" test -z "$left"
finish
