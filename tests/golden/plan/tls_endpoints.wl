// TLS endpoints: the scheme turns it on, options say what is trusted; a test server's
// certificate taken without verification is flagged in the plan.
workload secure { seed 3 }

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 10s
}

target qdb {
  dialect questdb
  qwp "wss://127.0.0.1:9000" { tls_ca "ca.pem"  tls_server_name "db.example.com" }
  http "https://127.0.0.1:9000" as rest { tls_verify false  path "/exec" }
  pg "postgres://admin@127.0.0.1:8812/qdb" { sslmode "verify-full"  tls_ca "ca.pem" }
}

ingest load {
  into qdb via qwp
  rows cpu
}

run q {
  against qdb.rest
  request GET "/exec"
  count 10
}
