// QuestDB cannot take a length, a primary key, or an index on a column that is not a symbol;
// PostgreSQL has no one-byte integer. Each is refused at its span, where the table is created
// there, not widened.
target questdb { dialect questdb  pg "postgres://admin:quest@127.0.0.1:8812/qdb" }
target postgres { dialect postgres  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" }
schema usertable {
  rows 100
  field ycsb_key: varchar(255) = format("user%d", seq())
  field flag: byte = uniform(0, 2)
  field n: integer = uniform(0, 100)
  primary key (ycsb_key)
  index (n)
}
ingest quest { into questdb via pg  rows usertable }
ingest pg { into postgres via pg  rows usertable }
// Without `setup recreate` wlrun creates nothing, and refuses nothing.
ingest own { into questdb via pg  rows usertable  setup truncate }
