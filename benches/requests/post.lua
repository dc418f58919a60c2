-- wrk without a hook: one fixed ksqlDB pull query, the request wrk builds once.
-- wrk -t1 -c1 -d10s -s post.lua http://127.0.0.1:PORT/query
wrk.method = "POST"
wrk.body = '{"ksql":"SELECT * FROM ORDERS_TABLE WHERE ORDERID = 42;","streamsProperties":{}}'
wrk.headers["Content-Type"] = "application/vnd.ksql.v1+json"
wrk.headers["Accept"] = "application/vnd.ksql.v1+json"
