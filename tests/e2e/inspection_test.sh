#!/usr/bin/env bash
# TLS inspection end to end: airlock terminates TLS with its own CA (made here with
# `airlock ca init`) for rules with `inspect: true`, verifies the origin against the
# test CA (upstream_ca), and judges every request. Real curl, git (dumb HTTP) and npm
# (a static registry) in the sandbox trust airlock's CA through their usual variables.
# Checked: an inspected host works; fronting (Host != SNI) is denied; a second name on
# a kept-alive connection gets 421; paths and methods are enforced; an allowed redirect
# works once, then the name is denied again; a redirect elsewhere is denied with its
# origin named; a credential reaches the origin without the sandbox holding it, and its
# echo is masked; an origin with an invalid certificate is denied (upstream_tls).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="inspected.airlock.test 203.0.113.10
api.airlock.test 203.0.113.10
cdn-ok.airlock.test 203.0.113.10
elsewhere.airlock.test 203.0.113.10
badcert.airlock.test 203.0.113.10
git.airlock.test 203.0.113.10
registry.airlock.test 203.0.113.10
plain.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="inspected.airlock.test api.airlock.test cdn-ok.airlock.test elsewhere.airlock.test git.airlock.test registry.airlock.test plain.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
for tool in git npm; do command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }; done

SECRET="Bearer e2e-$RANDOM$RANDOM-secret"
WORLD_NGINX_SERVERS="
  log_format withauth '\$host \$request auth=[\$http_authorization]';
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name inspected.airlock.test;
    access_log $W/inspected-access.log;
    location = /go-ok { return 302 https://cdn-ok.airlock.test/landed; }
    location = /go-elsewhere { return 302 https://elsewhere.airlock.test/landed; }
    location / { return 200 \"inspected origin: \$host \$request_method \$request_uri\\n\"; }
  }
  server {
    listen $ORIGIN_IP:443 ssl;
    listen $ORIGIN_IP:80;
    server_name cdn-ok.airlock.test elsewhere.airlock.test;
    location / { return 200 \"cdn: \$host\\n\"; }
  }
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name api.airlock.test;
    access_log $W/api-access.log withauth;
    location /v1/echo { return 200 \"you sent: \$http_authorization\\n\"; }
    location = /v1/gz { add_header Content-Encoding gzip; return 200 \"compressed\\n\"; }
    location / { return 200 \"api: \$request_method \$request_uri\\n\"; }
  }
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name badcert.airlock.test;
    ssl_certificate $W/bad.crt;
    ssl_certificate_key $W/bad.key;
    location / { return 200 \"should never be seen\\n\"; }
  }
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name git.airlock.test;
    root $W/git-root;
  }
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name registry.airlock.test;
    location = /tiny-pkg { default_type application/json; alias $W/registry/tiny-pkg.json; }
    location /tiny-pkg/-/ { alias $W/registry/tarballs/; }
  }
  server {
    listen $ORIGIN_IP:80;
    server_name plain.airlock.test;
    location = /go-ok { return 302 http://cdn-ok.airlock.test/landed; }
    location = /go-http443 { return 302 http://cdn-ok.airlock.test:443/landed; }
    location / { return 200 \"plain: \$host\\n\"; }
  }"

# A self-signed certificate nobody trusts, for badcert.airlock.test.
mkdir -p "$W"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=badcert.airlock.test" \
  -addext "subjectAltName=DNS:badcert.airlock.test" -keyout "$W/bad.key" -out "$W/bad.crt" 2>/dev/null

# A git repository served as static files (git's "dumb" HTTP protocol).
mkdir -p "$W/git-src" "$W/git-root"
git -C "$W/git-src" init -q -b main
echo "hello from git" >"$W/git-src/README"
git -C "$W/git-src" add README
git -C "$W/git-src" -c user.name=t -c user.email=t@example.test commit -qm first
git clone -q --bare "$W/git-src" "$W/git-root/repo.git"
git -C "$W/git-root/repo.git" update-server-info

# An npm registry of one package, as static files.
mkdir -p "$W/registry/tarballs" "$W/pkg/package"
printf '{"name":"tiny-pkg","version":"1.0.0","main":"index.js"}\n' >"$W/pkg/package/package.json"
echo 'module.exports = "tiny";' >"$W/pkg/package/index.js"
tar -C "$W/pkg" -czf "$W/registry/tarballs/tiny-pkg-1.0.0.tgz" package
sha1=$(sha1sum "$W/registry/tarballs/tiny-pkg-1.0.0.tgz" | cut -d' ' -f1)
integrity="sha512-$(openssl dgst -sha512 -binary "$W/registry/tarballs/tiny-pkg-1.0.0.tgz" | base64 -w0)"
printf '{"name":"tiny-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tiny-pkg","version":"1.0.0","dist":{"tarball":"https://registry.airlock.test/tiny-pkg/-/tiny-pkg-1.0.0.tgz","shasum":"%s","integrity":"%s"}}}}\n' \
  "$sha1" "$integrity" >"$W/registry/tiny-pkg.json"

world_up
"$AIRLOCK" ca init "$W/airlock-ca" >/dev/null
printf '%s\n' "$SECRET" >"$W/secret"
chmod 600 "$W/secret"
cat >"$W/airlock.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:15001
  dns: 0.0.0.0:15053
  http_proxy: 127.0.0.1:3128
  control: $W/control.sock
  admin: 127.0.0.1:9901
upstream_dns: [$DNS_IP]
log:
  decisions: $W/decisions.jsonl
inspection:
  ca_dir: $W/airlock-ca
  upstream_ca: [$W/ca.crt]
policies:
  sandbox:
    allow:
      - host: inspected.airlock.test
        inspect: true
      - host: api.airlock.test
        inspect: true
        paths: ["/v1/"]
        methods: [GET, HEAD]
      - host: badcert.airlock.test
        inspect: true
      - host: git.airlock.test
        inspect: true
      - host: registry.airlock.test
        inspect: true
      - host: plain.airlock.test
        ports: [80]
    redirects:
      - from: inspected.airlock.test
        to: [cdn-ok.airlock.test]
      - from: plain.airlock.test
        to: [cdn-ok.airlock.test]
    credentials:
      - host: api.airlock.test
        header: Authorization
        secret_file: $W/secret
sessions:
  - id: insp
    source: 198.51.100.0/24
    policy: sandbox
  - id: explicit
    source: 127.0.0.1/32
    policy: sandbox
YAML
world_start_airlock -c "$W/airlock.yaml"

ACA="$W/airlock-ca/ca.crt"
# curl in the sandbox trusting airlock's CA only (never the origin's test CA).
icurl() { world_sbx curl -sS --max-time 10 --cacert "$ACA" "$@"; }
# What a real sandbox trusts: the roots that sign origins (here the test CA) plus airlock's.
cat "$W/ca.crt" "$ACA" >"$W/trust.pem"
tcurl() { world_sbx curl -sS --max-time 10 --cacert "$W/trust.pem" "$@"; }

# 1. An inspected host works, and each request has its own line.
expect "an inspected host works through airlock's CA" \
  body_is "inspected origin: inspected.airlock.test GET /hello?x=1" icurl "https://inspected.airlock.test/hello?x=1"
expect "  the leaf names the host and is signed by airlock's CA" bash -c \
  "ip netns exec $SBX openssl s_client -connect inspected.airlock.test:443 -servername inspected.airlock.test \
     -CAfile $ACA -verify_return_error </dev/null 2>/dev/null | grep -q 'Verify return code: 0'"
expect "  the request has an http line with method and path" \
  line event=http verdict=allow name=inspected.airlock.test method=GET 'path=/hello?x=1' status=200
expect "  and the connection says it was inspected" line event=connect name=inspected.airlock.test 'notes~=inspected'
expect_not "  only airlock's CA is offered to the sandbox: the origin's own certificate is never seen" \
  world_sbx curl -sS --max-time 10 --cacert "$W/ca.crt" https://inspected.airlock.test/

# 2. Fronting and reuse for another name.
expect "fronting (SNI allowed, Host another name) is refused with 403" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl -o /dev/null -w '%{http_code}' -H 'Host: api.airlock.test' https://inspected.airlock.test/ | grep -qx 403"
expect "  denied as sni_host_mismatch" line event=http verdict=deny reason=sni_host_mismatch name=api.airlock.test
cat >"$W/reuse.py" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = ctx.wrap_socket(socket.create_connection(("inspected.airlock.test", 443), timeout=10),
                    server_hostname="inspected.airlock.test")
def ask(host):
    s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < length:
        rest += s.recv(4096)
    return head.split(b"\r\n")[0].decode()
print(ask("inspected.airlock.test"))
print(ask("api.airlock.test"))
PY
world_sbx python3 "$W/reuse.py" "$ACA" >"$W/reuse.out" 2>&1 || true
expect "a kept-alive connection asked for another name gets 421" \
  bash -c "head -1 $W/reuse.out | grep -q ' 200 ' && sed -n 2p $W/reuse.out | grep -q ' 421 '"
expect "  logged as misdirected" line event=http reason=misdirected status=421

expect "a client sending Expect: 100-continue hears it from airlock and its body goes through" \
  bash -c "head -c 200000 /dev/urandom >$W/body.bin; ip netns exec $SBX curl -sS -v --max-time 10 --cacert $ACA \
    -H 'Expect: 100-continue' --data-binary @$W/body.bin https://inspected.airlock.test/upload 2>&1 |
    grep -q '< HTTP/1.1 100 Continue'"
expect "  and the request was answered" line event=http method=POST path=/upload status=200

# Raw requests over TLS to an inspected host; prints each status line airlock or the origin sent.
cat >"$W/raw.py" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
host, payload = sys.argv[2], sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=10), server_hostname=host)
s.sendall(payload)
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except (socket.timeout, ssl.SSLError, ConnectionError):
    pass
for line in data.split(b"\r\n"):
    if line.startswith(b"HTTP/1."):
        print(line.decode())
PY
raw() { world_sbx python3 "$W/raw.py" "$ACA" "$@"; }
expect "Transfer-Encoding split over two fields (a smuggling vector) is refused with 400" \
  body_is "HTTP/1.1 400 Bad Request" raw api.airlock.test \
  'POST /v1/ok HTTP/1.1\r\nHost: api.airlock.test\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n2e\r\n0\r\n\r\nGET /v2/forbidden HTTP/1.1\r\nHost: api.airlock.test\r\n\r\n\r\n0\r\n\r\n'
expect "  and the smuggled request never reached the origin" bash -c "! grep -q /v2/forbidden $W/api-access.log"
expect "an absolute-form target is judged by the path the origin will serve (a query is no path)" \
  body_is "HTTP/1.1 403 Forbidden" raw api.airlock.test \
  'GET https://api.airlock.test?/v1/things HTTP/1.1\r\nHost: api.airlock.test\r\nConnection: close\r\n\r\n'
expect "a HEAD then a GET pipelined on one connection both get their answers" \
  body_is "HTTP/1.1 200 OK
HTTP/1.1 200 OK" raw inspected.airlock.test \
  'HEAD /a HTTP/1.1\r\nHost: inspected.airlock.test\r\n\r\nGET /b HTTP/1.1\r\nHost: inspected.airlock.test\r\nConnection: close\r\n\r\n'

# 3. Paths and methods.
expect "a path the rule lists is allowed" body_is "api: GET /v1/things" icurl https://api.airlock.test/v1/things
expect "a path it does not list is refused (403)" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl -o /dev/null -w '%{http_code}' https://api.airlock.test/v2/things | grep -qx 403"
expect "  as path_not_allowed" line event=http reason=path_not_allowed 'path=/v2/things'
expect "an encoded way around the prefix is refused" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl --path-as-is -o /dev/null -w '%{http_code}' 'https://api.airlock.test/v1/%2e%2e/v2/things' | grep -qx 400"
expect "a method it does not list is refused" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl -o /dev/null -w '%{http_code}' -X DELETE https://api.airlock.test/v1/things | grep -qx 403"
expect "  as method_not_allowed" line event=http reason=method_not_allowed method=DELETE

expect_not "without SNI (an address from DNS), a path the rule does not list is never reached" \
  bash -c "ip netns exec $SBX curl -sS -k --max-time 10 -H 'Host: api.airlock.test' https://$ORIGIN_IP/v2/things | grep -q 'api: GET /v2/things'"
expect "  the hello named nothing, and :443 carries TLS naming the host: protocol_not_allowed" \
  line event=connect dst=$ORIGIN_IP:443 reason=protocol_not_allowed 'notes~=name_from_dns_answer' \
  'notes~=spoke:tls_without_sni'

cat >"$W/opaque.py" <<'PY'
import socket, sys
ip = socket.gethostbyname("api.airlock.test")  # through airlock's DNS: the name table learns it
s = socket.create_connection((ip, 80), timeout=10)
s.sendall(b"\r\nGET /v2/things HTTP/1.1\r\nHost: api.airlock.test\r\nConnection: close\r\n\r\n")
data = b""
try:
    while chunk := s.recv(4096):
        data += chunk
except OSError:
    pass
print(data.decode("latin-1"))
PY
expect_not "bytes that are not a request line we read (a leading CRLF), to an inspecting rule's address, reach nothing" \
  bash -c "ip netns exec $SBX python3 $W/opaque.py | grep -q 'api: GET /v2/things'"
expect "  refused: :80 carries a request naming the host" line event=connect dst=$ORIGIN_IP:80 \
  reason=protocol_not_allowed 'notes~=spoke:opaque'

# 4. Redirects.
expect_not "before any redirect, cdn-ok is not allowed" tcurl https://cdn-ok.airlock.test/
expect "an allowed redirect is followed" body_is "cdn: cdn-ok.airlock.test" tcurl -L https://inspected.airlock.test/go-ok
expect "  the grant is on the redirect's line" line event=http name=inspected.airlock.test status=302 'notes~=redirect_granted:cdn-ok.airlock.test'
expect "  the follow-up connection is allowed by it, its origin named" \
  line event=connect name=cdn-ok.airlock.test verdict=allow reason=redirect_allowed 'notes~=redirect_from:inspected.airlock.test'
expect_not "  and only once: a second visit is denied" tcurl https://cdn-ok.airlock.test/
expect_not "a redirect elsewhere passes to the client, whose follow-up is denied" \
  tcurl -L https://inspected.airlock.test/go-elsewhere
expect "  with reason redirect_not_allowed, the origin named" \
  line name=elsewhere.airlock.test verdict=deny reason=redirect_not_allowed 'notes~=redirect_from:inspected.airlock.test'
expect "a redirect on plain HTTP is followed the same way" body_is "cdn: cdn-ok.airlock.test" \
  bash -c "$(declare -f world_sbx); SBX=$SBX; world_sbx curl -sS --max-time 10 --cacert $ACA -L http://plain.airlock.test/go-ok | sed 's/ *$//'"
# An http:// redirect's allowance is for a plain request: TLS to the same host and port is
# neither let through nor does it use the allowance up.
world_sbx curl -sS --max-time 10 -o /dev/null http://plain.airlock.test/go-ok
expect_not "after an http:// redirect, TLS to its host on :80 is not let through" \
  tcurl --resolve cdn-ok.airlock.test:80:203.0.113.10 https://cdn-ok.airlock.test:80/
expect "  denied as any host the policy does not allow" \
  line event=connect name=cdn-ok.airlock.test dst=203.0.113.10:80 proto=tls verdict=deny reason=host_not_allowed
expect "  and the allowance still serves the plain request it was for" body_is "cdn: cdn-ok.airlock.test" \
  bash -c "$(declare -f world_sbx); SBX=$SBX; world_sbx curl -sS --max-time 10 http://cdn-ok.airlock.test/landed | sed 's/ *$//'"
expect "a redirect to http:// on a TLS port grants nothing (redirect_scheme_port_mismatch)" \
  bash -c "$(declare -f world_sbx); SBX=$SBX; world_sbx curl -sS --max-time 10 -o /dev/null http://plain.airlock.test/go-http443; \
    python3 $check_lib/decisions.py $W/decisions.jsonl event=http path=/go-http443 status=302 \
      'notes~=redirect_refused:cdn-ok.airlock.test' 'notes~=redirect_scheme_port_mismatch'"

# 5. Credentials.
expect "a credential is put on the request: the origin's echo arrives masked" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl https://api.airlock.test/v1/echo | grep -q '^you sent: \*\*\*\*'"
expect "  the origin received the secret" grep -qF "auth=[$SECRET]" "$W/api-access.log"
expect "  the line says credential_injected, never the value" \
  bash -c "grep -q credential_injected $W/decisions.jsonl && ! grep -qF '${SECRET#Bearer }' $W/decisions.jsonl"
expect "  a header the sandbox sends under that name is replaced" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl -o /dev/null -H 'Authorization: Bearer forged' https://api.airlock.test/v1/things; ! grep -q 'forged' $W/api-access.log"
expect "a compressed response to a request with a credential is refused (an echo in it could not be masked)" \
  bash -c "$(declare -f icurl world_sbx); SBX=$SBX ACA=$ACA; icurl -o /dev/null -w '%{http_code}' https://api.airlock.test/v1/gz | grep -qx 502"
expect "  its line says why" line event=http path=/v1/gz status=502 'notes~=encoded_response_with_credential'
expect "  the sandbox's environment does not hold it" bash -c "! ip netns exec $SBX env | grep -qF '${SECRET#Bearer }'"

# 6. An origin whose certificate does not verify.
expect_not "an origin with an invalid certificate is refused" icurl https://badcert.airlock.test/
expect "  as upstream_tls" line event=connect name=badcert.airlock.test verdict=deny reason=upstream_tls
expect "  its server saw no request" bash -c "! grep -q badcert $W/origin-access.log"

# 7. Real tools trusting the CA the usual way.
expect "git clones through inspection (GIT_SSL_CAINFO)" \
  world_sbx env GIT_SSL_CAINFO="$ACA" HOME="$W" git clone -q https://git.airlock.test/repo.git "$W/clone"
expect "  the clone has the file" grep -q "hello from git" "$W/clone/README"
mkdir -p "$W/npm-project" "$W/npm-cache"
echo '{"name":"e2e","version":"1.0.0"}' >"$W/npm-project/package.json"
# npm_config_cafile as well: a global npmrc's cafile (Debian images often set one)
# replaces Node's store, NODE_EXTRA_CA_CERTS included.
cat /etc/ssl/certs/ca-certificates.crt "$W/trust.pem" >"$W/npm-trust.pem" 2>/dev/null || cp "$W/trust.pem" "$W/npm-trust.pem"
expect "npm installs through inspection (NODE_EXTRA_CA_CERTS, npm_config_cafile)" \
  world_sbx env -C "$W/npm-project" NODE_EXTRA_CA_CERTS="$ACA" npm_config_cafile="$W/npm-trust.pem" HOME="$W" \
  npm_config_cache="$W/npm-cache" \
  npm install --registry https://registry.airlock.test/ --no-audit --no-fund --no-update-notifier tiny-pkg
expect "  the package is there" test -f "$W/npm-project/node_modules/tiny-pkg/index.js"
expect "  each of its requests was judged" line event=http name=registry.airlock.test method=GET path=/tiny-pkg verdict=allow

expect "airlock explain shows each inspected request under its connection" \
  bash -c "NO_COLOR=1 '$AIRLOCK' explain --log '$W/decisions.jsonl' insp | grep -q 'GET /hello?x=1 -> 200'"

# 8. The explicit proxy: a CONNECT to an inspecting rule's host is inspected as well
#    (a client of the explicit listener in the gateway, as the "explicit" session).
gcurl() { ip netns exec "$GW" curl -sS --max-time 10 --proxy http://127.0.0.1:3128 --cacert "$ACA" "$@"; }
expect "a CONNECT tunnel to an inspected host is served through airlock's CA" \
  body_is "inspected origin: inspected.airlock.test GET /via-connect" gcurl https://inspected.airlock.test/via-connect
expect "  its request has its own line" line event=http session=explicit method=GET path=/via-connect verdict=allow
expect "  paths are enforced inside the tunnel too" \
  bash -c "$(declare -f gcurl); GW=$GW ACA=$ACA; gcurl -o /dev/null -w '%{http_code}' https://api.airlock.test/v2/x | grep -qx 403"
expect_not "  a tunnel whose ClientHello names another host is refused" \
  ip netns exec "$GW" curl -sS --max-time 10 --proxy http://127.0.0.1:3128 --cacert "$ACA" \
  --connect-to inspected.airlock.test:443:api.airlock.test:443 https://inspected.airlock.test/
expect "  as sni_host_mismatch" line event=connect session=explicit reason=sni_host_mismatch
expect "a redirect followed inside an inspected tunnel lets the next CONNECT through, once" \
  body_is "cdn: cdn-ok.airlock.test" ip netns exec "$GW" curl -sS --max-time 10 --proxy http://127.0.0.1:3128 \
  --cacert "$W/trust.pem" -L https://inspected.airlock.test/go-ok
expect "  its CONNECT line names the redirect's origin" \
  line event=connect session=explicit name=cdn-ok.airlock.test reason=redirect_allowed 'notes~=redirect_from:inspected.airlock.test'

metric() { ip netns exec "$GW" curl -sS --max-time 5 http://127.0.0.1:9901/metrics | sed -n "s/^$1 //p"; }
expect "leaves are minted once per name and then served from the cache (metrics)" \
  bash -c "$(declare -f metric); GW=$GW; m=\$(metric 'airlock_tls_leaves_total{result=\"minted\"}'); h=\$(metric 'airlock_tls_leaves_total{result=\"hit\"}');
           [[ \${m%.*} -ge 1 && \${m%.*} -le 8 && \${h%.*} -ge 10 ]]"

# 9. Inside `airlock run` (its own namespace behind the gateway, the CA offered by the daemon):
#    the credential does its work, and the sandbox holds the secret nowhere.
ST="$W/state"
mkdir -p "$W/home"
arun() {
  nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/control.sock" \
    --policy sandbox --no-cwd "$@"
}
TAIL=${SECRET#Bearer }
expect "inside airlock run, a request the credential is for succeeds" \
  bash -c "$(declare -f arun); GW=$GW W=$W ST=$ST AIRLOCK=$AIRLOCK; arun -- curl -sS --max-time 10 https://api.airlock.test/v1/echo 2>/dev/null | grep -q '^you sent: \*\*\*\*'"
expect "  the origin got the secret from airlock" bash -c "test \$(grep -cF 'auth=[$SECRET]' $W/api-access.log) -ge 2"
expect "  the sandbox holds it in no variable and no file it can read" \
  arun -- sh -c "test ! -e '$W/secret' && ! env | grep -qF '$TAIL' && ! grep -rqsF '$TAIL' /etc /run /tmp /var/tmp \"\$HOME\""

# 10. The CA and the origin trust are read at start: a reload that changes them is refused.
"$AIRLOCK" ca init "$W/other-ca" >/dev/null
sed -i "s|ca_dir: $W/airlock-ca|ca_dir: $W/other-ca|" "$W/airlock.yaml"
expect "a reload that changes inspection: is refused (422), saying to restart" \
  bash -c "[[ \$(curl -sS --max-time 5 --unix-socket $W/control.sock -X POST http://airlock/v1/reload \
    -o $W/reload.out -w '%{http_code}') == 422 ]] && grep -q 'restart the daemon' $W/reload.out"
sed -i "s|ca_dir: $W/other-ca|ca_dir: $W/airlock-ca|" "$W/airlock.yaml"
expect "  and inspection goes on with the CA it started with" \
  body_is "inspected origin: inspected.airlock.test GET /after-reload" icurl https://inspected.airlock.test/after-reload

check_summary
