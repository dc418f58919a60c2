// The DDL each phase's setup runs: a YCSB table on PostgreSQL with its types, primary key and
// indexes, then the user's `setup sql` for PostgreSQL; the same table on SQLite; on QuestDB
// the user's own table (`setup sql` alone is the whole setup), and one wlrun creates with a
// symbol index.
target postgres { dialect postgres  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" }
target lite { dialect generic  sqlite "bench.db" }
target questdb { dialect questdb  pg "postgres://admin:quest@127.0.0.1:8812/qdb" }
schema usertable {
  table "usertable"
  rows 1_000
  field ycsb_key: varchar(255) = format("user%d", seq())
  field field0: text = pattern("[a-z]{100}")
  field field1: text = pattern("[a-z]{100}")
  field Order: integer = uniform(0, 100)
  primary key (ycsb_key)
  index (field1 desc)
}
schema readings {
  table "readings"
  series sensor: symbol = format("s%d", n) for n in 0..10
  field value: double = uniform(0.0, 1.0)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 10s
  index (sensor)
}
ingest load {
  into postgres via pg
  rows usertable
  setup recreate
  setup sql postgres "CREATE INDEX usertable_field0_idx ON ${table} (field0)"
  setup sql sqlite "CREATE INDEX usertable_field0_idx ON usertable (field0)"
}
ingest lite_load {
  into lite via sqlite
  rows usertable
  setup sql postgres "never runs on SQLite"
  setup sql sqlite "CREATE TABLE usertable (ycsb_key TEXT PRIMARY KEY, field0 TEXT, field1 TEXT, \"Order\" INTEGER)"
}
ingest quest {
  into questdb via pg
  rows readings
  setup sql questdb "CREATE TABLE IF NOT EXISTS readings (sensor SYMBOL INDEX, value DOUBLE, ts TIMESTAMP) timestamp(ts) PARTITION BY DAY WAL"
}
ingest quest_ours {
  into questdb via pg table "readings2"
  rows readings
}
