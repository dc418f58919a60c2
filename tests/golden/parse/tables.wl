// Tables you control: SQL types with lengths, a primary key, indexes, `setup sql`.
schema usertable {
  table "usertable"
  rows 1_000
  field ycsb_key: varchar(255) = format("user%d", seq())
  field field0: text = pattern("[a-z]{100}")
  field code: char(2) = pick(["ab", "cd"])
  field n: integer = uniform(0, 100)
  field s: smallint = uniform(0, 10)
  field at: timestamptz = 2024-01-01T00:00:00Z
  primary key (ycsb_key)
  index (code, at desc)
  index by_n (n asc, s,)
}
ingest load {
  into pg via pg
  rows usertable
  setup recreate
  setup sql postgres "CREATE INDEX ON ${table} (field0)"
  setup sql questdb "ALTER TABLE usertable DEDUP ENABLE UPSERT KEYS(ts)"
}
