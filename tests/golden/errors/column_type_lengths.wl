// A length is a number of characters from 1 to 10,485,760, and only varchar and char take one.
target db { sqlite "bench.db" }
schema s {
  rows 10
  field zero: varchar(0) = "x"
  field huge: char(99_999_999) = "x"
  field unit: varchar(ns) = "x"
  field n: integer(4) = 1
  field t: timestamptz(ns) = 2024-01-01T00:00:00Z
}
ingest load { into db via sqlite  rows s }
