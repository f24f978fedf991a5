#!/bin/bash
# Runs the _wlm session shown in docs/wlm.md against `npm start` on a free port; prints commands and answers.
set -u
cd "$(dirname "$0")/.."
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
DATA=$(mktemp -d)
export QUERY_SANDBOX_ADMIN_TOKEN=wlm-demo-token-0123456789
npm start -- --port "$PORT" --data-dir "$DATA" --max-docs 300 --node-id node-1 > "$DATA/server.log" 2>&1 &
NPM=$!
for i in $(seq 1 240); do
  curl -s -o /dev/null "localhost:$PORT/" && break
  sleep 1
done
H="localhost:$PORT"
AUTH="Authorization: Bearer $QUERY_SANDBOX_ADMIN_TOKEN"
run() { # show the command with the port as 9200, then its answer
  printf '$ %s\n' "$(echo "$1" | sed "s/$PORT/9200/g")"
  eval "$1" | sed "s/$PORT/9200/g"
  echo
}
run "curl -s -XPUT $H/_wlm/workload_group -H \"\$AUTH\" -H 'content-type: application/json' -d '{\"name\": \"analytics\", \"resiliency_mode\": \"enforced\", \"resource_limits\": {\"cpu\": 0.4, \"memory\": 0.2}, \"settings\": {\"search.cancel_after_time_interval\": \"30s\"}, \"throttling\": {\"node_limit\": 2}}' | jq ."
ID=$(curl -s "$H/_wlm/workload_group/analytics" | jq -r '.workload_groups[0]._id')
run "curl -s $H/_wlm/workload_group/analytics | jq ."
echo "# the same sandbox through /_sandbox ($ID is its _id)"
run "curl -s $H/_sandbox/$ID | jq ."
echo "# give it selection attributes there (a _wlm body has no word for them)"
run "curl -s -XPUT $H/_sandbox/$ID -H \"\$AUTH\" -H 'content-type: application/json' -d '{\"selectionAttributes\": [{\"name\": \"userPattern\", \"value\": \"bi_*\"}]}' | jq -c '{_id, version, selectionAttributes}'"
echo "# update through _wlm: a 1 ms search timeout; the group's other settings stay"
run "curl -s -XPUT $H/_wlm/workload_group/analytics -H \"\$AUTH\" -H 'content-type: application/json' -d '{\"settings\": {\"search.default_search_timeout\": \"1ms\"}}' | jq -c '{name, settings, throttling}'"
echo "# a slow query of the group (named by workloadGroupId) stops at its timeout with partial hits"
run "curl -s -XPOST $H/_all/_search -H 'x-user: bi_ann' -H \"workloadGroupId: $ID\" -H 'content-type: application/json' -d '{\"query\": {\"match\": {\"body\": {\"query\": \"mony ofer frie linx\", \"fuzziness\": 2}}}, \"size\": 0}' | jq -c '{timed_out, _shards, total: .hits.total}'"
echo "# the request's own timeout wins (override_request_values is false)"
run "curl -s -XPOST '$H/_all/_search?timeout=10s' -H 'x-user: bi_ann' -H \"workloadGroupId: $ID\" -H 'content-type: application/json' -d '{\"query\": {\"match\": {\"body\": {\"query\": \"mony ofer frie linx\", \"fuzziness\": 2}}}, \"size\": 0}' | jq -c '{timed_out, _shards, total: .hits.total}'"
echo "# with override_request_values the group's timeout beats the request's"
run "curl -s -XPUT $H/_wlm/workload_group/analytics -H \"\$AUTH\" -H 'content-type: application/json' -d '{\"settings\": {\"override_request_values\": true}}' | jq -c '{name, settings}'"
run "curl -s -XPOST '$H/_all/_search?timeout=10s' -H 'x-user: bi_ann' -H \"workloadGroupId: $ID\" -H 'content-type: application/json' -d '{\"query\": {\"match\": {\"body\": {\"query\": \"mony ofer frie linx\", \"fuzziness\": 2}}}, \"size\": 0}' | jq -c '{timed_out, _shards, total: .hits.total}'"
run "curl -s $H/_wlm/stats | jq ."
run "curl -s $H/_wlm/node-1/stats/$ID | jq -c ."
run "curl -s '$H/_list/wlm_stats?v=true&size=1'"
TOKEN=$(curl -s "$H/_list/wlm_stats?size=1" | awk '/^next_token/ {print $2}')
run "curl -s '$H/_list/wlm_stats?v=true&size=1&next_token=$TOKEN'"
run "curl -s '$H/_list/wlm_stats?format=json&sort=workload_group&order=desc' | jq -c ."
run "curl -s -XDELETE $H/_wlm/workload_group/analytics -H \"\$AUTH\""
run "curl -s $H/_wlm/workload_group/analytics"
run "curl -s $H/_sandbox/$ID"
# Stop the node process that npm started (npm does not pass SIGTERM on).
for child in $(pgrep -P "$NPM"); do
  for grandchild in $(pgrep -P "$child"); do kill "$grandchild" 2>/dev/null; done
  kill "$child" 2>/dev/null
done
wait "$NPM" 2>/dev/null
rm -rf "$DATA"
