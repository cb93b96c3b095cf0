-- wrk script of tools/load-test/run: a mix of GET /restaurants/:id/menu and POST
-- /restaurants/:id/orders over the restaurants listed in $IDS_FILE (one UUID a line);
-- $READ_PERCENT of the requests are GETs. Counts responses by status in every thread and prints
-- the totals (acknowledged orders: the 201s) with the latency percentiles at the end.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  ids = {}
  for line in io.lines(os.getenv("IDS_FILE")) do
    if #line > 0 then table.insert(ids, line) end
  end
  read_percent = tonumber(os.getenv("READ_PERCENT") or "90")
  math.randomseed(os.time() + tonumber(tostring(ids):match("0x(%x+)") or "0", 16) % 100000)
  ok_get, acked, unavailable, unknown, other = 0, 0, 0, 0, 0
end

function request()
  local id = ids[math.random(#ids)]
  if math.random(100) <= read_percent then
    return wrk.format("GET", "/restaurants/" .. id .. "/menu")
  end
  return wrk.format("POST", "/restaurants/" .. id .. "/orders", { ["Content-Type"] = "application/json" }, '{"dishes":[]}')
end

function response(status, headers, body)
  if status == 200 then
    ok_get = ok_get + 1
  elseif status == 201 then
    acked = acked + 1
  elseif status == 503 then
    unavailable = unavailable + 1
    if body and body:find("commitOutcomeUnknown", 1, true) then unknown = unknown + 1 end
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local t = { ok_get = 0, acked = 0, unavailable = 0, unknown = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for k, _ in pairs(t) do t[k] = t[k] + (thread:get(k) or 0) end
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.1f rps=%.0f p50_ms=%.2f p99_ms=%.2f get_200=%d orders_201=%d status_503=%d outcome_unknown=%d status_other=%d socket_errors=%d timeouts=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    t.ok_get, t.acked, t.unavailable, t.unknown, t.other,
    e.connect + e.read + e.write, e.timeout))
end
