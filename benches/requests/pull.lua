-- wrk with a hook: a ksqlDB pull query for a random key, built by Lua for every request
-- (the equivalent of pull.rhai).
-- wrk -t1 -c1 -d10s -s pull.lua http://127.0.0.1:PORT/query
local headers = {
   ["Accept"] = "application/vnd.ksql.v1+json",
   ["Content-Type"] = "application/vnd.ksql.v1+json",
}

request = function()
   local key = math.random(0, 99999)
   local body = '{"ksql":"SELECT * FROM ORDERS_TABLE WHERE ORDERID = ' .. key
      .. ';","streamsProperties":{}}'
   return wrk.format("POST", "/query", headers, body)
end
