// Query parameters from a CSV file, one row per query, routed by host.
target pg {
  pg "postgres://postgres@127.0.0.1:5432/homework"
}

query buckets {
  label "cpu-buckets"
  sql "SELECT date_trunc('minute', ts), min(usage), max(usage) FROM cpu_usage
       WHERE host = $1 AND ts >= $2 AND ts <= $3 GROUP BY 1 ORDER BY 1"
  binds from csv "support/params.csv" (hostname text, start_time timestamp, end_time timestamp)
  route by $1
}

run homework {
  against pg.pg
  queries buckets
  workers 2
  count 2
}
