#!/usr/bin/env bash
# One sandbox's curl and dig traffic for bench/soak, run inside the sandbox's namespace
# (`ip netns exec NS bash soak_client.sh ...`, so every curl and dig it starts is in it):
#   soak_client.sh ID GW_IP CA STOPFILE COUNTS END PACE
# A fixed cycle of 10 steps, one step every PACE seconds (0.35 by default), until END
# (epoch seconds) or STOPFILE exists, and never more than 100,000 steps. Every request is
# bounded (curl --max-time 10, dig +time=3 +tries=1). Names are made unique with ID and the
# step number, so denied names never repeat and allowed lookups miss the cache.
#
# After each request it appends to COUNTS one line "KIND N": N connections (curl's
# num_connects) or N queries made, each of which must have its decision line; and, for
# allowed requests that did not get what they should, "fail:KIND N"; and
# "requests:KIND N", the URLs asked (several ride on one kept-alive connection).
set -uo pipefail
id=$1 gw=$2 ca=$3 stopfile=$4 counts=$5 end=$6 pace=$7
big_size=${SOAK_BIG_SIZE:-5000000}
n=0 child=
# A TERM from bench/soak while a request runs: stop that request (by its PID), then exit.
trap '[[ -n $child ]] && kill "$child" 2>/dev/null; exit 0' TERM INT

add() { [[ ${2:-0} == 0 ]] || printf '%s %d\n' "$1" "$2" >>"$counts"; }
# bg OUTFILE CMD...: runs CMD in the background (its PID in $child, so the trap can stop it),
# its stdout into OUTFILE, and waits.
bg() {
  local out=$1
  shift
  "$@" >"$out" 2>/dev/null &
  child=$!
  wait "$child"
  local rc=$?
  child=
  return $rc
}
tmp=$(mktemp "${counts%/*}/client-$id.XXXXXX")
trap 'rm -f "$tmp"' EXIT

# curl_kind KIND WANT_CODE ARGS...: a curl whose -w prints "CODE CONNECTS SIZE" per URL;
# counts the connections it made (curl's num_connects), and, when WANT_CODE is set, a
# failure for each URL that got another code (for https_big, another size) or none.
curl_kind() {
  local kind=$1 want=$2 a urls=0 conns bad
  shift 2
  for a in "$@"; do [[ $a != http* ]] || urls=$((urls + 1)); done
  bg "$tmp" curl -sS --max-time 10 --cacert "$ca" -w '%{http_code} %{num_connects} %{size_download}\n' "$@"
  conns=$(awk '{ s += $2 } END { print s + 0 }' "$tmp")
  add "$kind" "$conns"
  [[ -n $want ]] || return 0
  bad=$(awk -v want="$want" -v size="$big_size" -v kind="$kind" \
    '$1 != want || (kind == "https_big" && $3 != size) { b++ } END { print b + 0 }' "$tmp")
  add "fail:$kind" $((bad + urls - $(wc -l <"$tmp")))
  add "requests:$kind" "$urls"
}

# dig_kind KIND WANT TCP NAME...: queries each NAME once; counts the queries, and for an
# allowed kind a failure for each NAME without an A record, for a denied kind one without
# NXDOMAIN.
dig_kind() {
  local kind=$1 want=$2 tcp=$3 got
  shift 3
  bg "$tmp" dig +time=3 +tries=1 ${tcp:+"$tcp"} @"$gw" +noall +answer +comments "$@"
  add "$kind" "$#"
  if [[ $want == allow ]]; then
    got=$(grep -c $'\tIN\tA\t203.0.113.10$' "$tmp")
  else
    got=$(grep -c 'status: NXDOMAIN' "$tmp")
  fi
  add "fail:$kind" "$(($# - got))"
}

while ((n < 100000)) && (($(date +%s) < end)) && [[ ! -e $stopfile ]]; do
  n=$((n + 1))
  u=$id-$n
  case $((n % 10)) in
    0 | 5) # new HTTPS connections, one small page each (Connection: close)
      curl_kind https_new 200 -H 'Connection: close' -o /dev/null "https://new.soak.test/1/$u" \
        -o /dev/null "https://new.soak.test/2/$u" -o /dev/null "https://new.soak.test/3/$u" \
        -o /dev/null "https://new.soak.test/4/$u" ;;
    1) # one kept-alive HTTPS connection, ten requests
      set -- ; for k in 1 2 3 4 5 6 7 8 9 10; do set -- "$@" -o /dev/null "https://ka.soak.test/$k/$u"; done
      curl_kind https_keepalive 200 "$@" ;;
    2) # plain HTTP, five requests on one connection, each judged
      set -- ; for k in 1 2 3 4 5; do set -- "$@" -o /dev/null "http://plain.soak.test/$k/$u"; done
      curl_kind http_plain 200 "$@" ;;
    3) # allowed names: ten nobody asked before and two cached
      set -- ; for k in a b c d e f g h i j; do set -- "$@" "$k$u.dns.soak.test"; done
      dig_kind dig_allowed allow "" "$@" hit.dns.soak.test hit.dns.soak.test ;;
    4) # denied names over DNS
      set -- ; for k in a b c d e f g h; do set -- "$@" "$k$u.dig.evil.test"; done
      dig_kind dig_denied deny "" "$@" ;;
    6) # denied names in the TLS SNI, sent to the attacker's address
      set -- ; for k in a b c; do
        set -- "$@" --resolve "$k$u.sni.evil.test:443:203.0.113.66" -o /dev/null "https://$k$u.sni.evil.test/"
      done
      curl_kind sni_denied "" "$@" ;;
    7) # denied names in the HTTP Host, and the metadata address
      set -- ; for k in a b c; do
        set -- "$@" --resolve "$k$u.host.evil.test:80:203.0.113.66" -o /dev/null "http://$k$u.host.evil.test/"
      done
      curl_kind host_denied "" "$@"
      curl_kind metadata "" -o /dev/null "http://169.254.169.254/latest/meta-data/$u" \
        -o /dev/null "http://169.254.169.254/latest/user-data/$u" ;;
    8) # a private address, over HTTP (by address) and TLS without SNI
      curl_kind private_http "" -o /dev/null "http://10.66.0.10/$u" -o /dev/null "https://10.66.0.10/$u" ;;
    9) # every third time a larger download, else allowed lookups over TCP
      if ((n % 30 == 9)); then
        curl_kind https_big 200 -o /dev/null "https://big.soak.test/big.bin"
      else
        dig_kind dig_allowed allow +tcp "t$u.dns.soak.test" "w$u.dns.soak.test" hit.dns.soak.test
      fi ;;
  esac
  sleep "$pace" &
  child=$!
  wait "$child"
  child=
done
exit 0
