-- wrk script of the load test: POSTs one V2 inference request on every call and prints the run's
-- figures as one JSON line prefixed "WRK_JSON ". The body is $LOADTEST_BODY, or the bytes spelled
-- in hex by $LOADTEST_BODY_HEX (a binary-tensor body holds NUL bytes, which the environment
-- cannot), else one Iris row; $LOADTEST_HEADER_LENGTH, when set, is sent as
-- Inference-Header-Content-Length (the binary tensor extension).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local hex = os.getenv("LOADTEST_BODY_HEX")
if hex then
  wrk.body = hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end)
  wrk.headers["Content-Type"] = "application/octet-stream"
else
  wrk.body = os.getenv("LOADTEST_BODY")
    or '{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'
end
local header_length = os.getenv("LOADTEST_HEADER_LENGTH")
if header_length then
  wrk.headers["Inference-Header-Content-Length"] = header_length
end

done = function(summary, latency, requests)
  local e = summary.errors
  -- wrk reports times in microseconds.
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
