// A group's members: an unknown name, a name twice, a block in two groups, `until` naming a
// non-member, a group of one, and a query that is not a block. Every mistake is reported.
target t { null  http "http://127.0.0.1:1" }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

query q { sql "SELECT 1" }

ingest load {
  into t via null
  rows s
}

run reads {
  against t.http
  request GET "/"
  count 10
}

concurrent a {
  phases load, reads, nope, load
  until other
}

concurrent b {
  phases reads, q
}

run solo {
  against t.http
  request GET "/"
  count 10
}

concurrent c {
  phases solo
}
