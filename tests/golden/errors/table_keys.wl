// Keys name columns of the schema, once each; a primary key has no order and no null column;
// a length holds the longest text a generator is known to make; `setup sql` names a dialect.
target pg { dialect postgres  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" }
schema t {
  rows 100
  field k: varchar(4) = pick(["user1", "u2"])
  field v: text = "x" null 5%
  field c: char(2) = uuid()
  primary key (k desc, v)
  primary key (k)
  index (nosuch, k, k)
  index dup (v)
  index dup (k)
}
ingest load {
  into pg via pg
  rows t
  setup sql postgress "CREATE INDEX ON t (v)"
  setup sql postgres ""
  setup sql sqlite "CREATE INDEX ${env("NAME", "i")} ON t (v)"
}
