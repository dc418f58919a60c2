// YCSB's core workloads A to F (brianfrankcooper/YCSB, site.ycsb.workloads.CoreWorkload), as
// its workload files define them: the table, the key names, the field values, every key chooser
// and the operations. The mixes, as `queries` selections of a run (see
// workloads/ycsb-postgres.wl, which runs all six against PostgreSQL):
//
//   A  update heavy     read 50, update 50                 zipfian
//   B  read mostly      read 95, update 5                  zipfian
//   C  read only        read 100                           zipfian
//   D  read latest      read_latest 95, insert 5           latest
//   E  short ranges     scan 95, insert 5                  zipfian, scan length uniform 1..100
//   F  read-modify-write read 50, read_modify_write 50     zipfian
//
// What YCSB does and how this file says it:
//   * usertable: YCSB_KEY VARCHAR(255) PRIMARY KEY and FIELD0 .. FIELD9 (fieldcount 10, fieldlength
//     100, constant length): `ycsb_key` and `field0` .. `field9`, every value 100 bytes as
//     RandomByteIterator makes them (`ycsb_value`).
//   * Keys: `user` + the key number hashed with YCSB's FNV-1a (`insertorder=hashed`, the default
//     of every core workload), `ycsb_key(n)`. The load inserts key numbers 0 .. record_count - 1.
//   * readallfields=true (reads and scans fetch every field), writeallfields=false (an update
//     writes one field, chosen uniformly): the update is a family of one query per field,
//     `update[0]` .. `update[9]`, whose weight is shared among its members.
//   * zipfian is YCSB's scrambled zipfian over record_count + expected new keys + 1 items
//     (max inclusive), its constant 0.99; a key above the newest inserted one is drawn again,
//     as YCSB's nextKeynum does. expected new keys = operation_count x insert share x 2 (YCSB's
//     "fudge factor"): 0 for A, B, C, F and operation_count / 10 for E.
//   * latest: the newest inserted key is the most popular (YCSB's SkewedLatestGenerator).
//   * Inserts of the run phase take the next key numbers in the run's order: record_count +
//     the insert's instance index. A read or scan draws from the keys whose inserts come earlier
//     in that order (`issued(insert)`); with several workers such an insert may still be in
//     flight, and the read finds nothing: not found, counted apart (YCSB's NOT_FOUND).
//   * An update, insert or read-modify-write that changes no row is an error
//     (`expect affected == 1`); a read that finds no row is not found.
//   * F's read-modify-write reads a key and writes one field of it on the same connection, one
//     latency for both (and each statement's own), no transaction (YCSB has none).
//
// Import it with the sizes you want:
//
//   import "std/ycsb/core.wl" as ycsb (record_count = 100_000, operation_count = 1_000_000)

param record_count    = 1000    // recordcount
param operation_count = 1000    // operationcount (E's expected new keys are sized with it)
param field_length    = 100     // fieldlength (constant)
param max_scan_length = 100     // E's maxscanlength (minscanlength 1, uniform)

schema usertable {
  table "usertable"
  rows record_count
  field ycsb_key: varchar(255) = ycsb_key(seq())
  for i in 0..10 {
    field field${i}: text = ycsb_value(field_length)
  }
  primary key (ycsb_key)
}

// A, B, C and F: no inserts, so the newest key is record_count - 1 throughout.
query read {
  label "READ"
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  bind $1 = ycsb_key(scrambled_zipfian(0, record_count + 1, last = record_count - 1))
  not found when rows == 0
}

query update for f in 0..10 {
  label "UPDATE"
  sql "UPDATE usertable SET field${f} = $2 WHERE ycsb_key = $1"
  bind $1 = ycsb_key(scrambled_zipfian(0, record_count + 1, last = record_count - 1))
  bind $2 = ycsb_value(field_length)
  expect affected == 1
}

query read_modify_write for f in 0..10 {
  label "READ-MODIFY-WRITE"
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  then sql "UPDATE usertable SET field${f} = $2 WHERE ycsb_key = $1"
  bind $1 = ycsb_key(scrambled_zipfian(0, record_count + 1, last = record_count - 1))
  bind $2 = ycsb_value(field_length)
  expect affected == 1
}

// D: reads of the latest keys, beside inserts.
query read_latest {
  label "READ"
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  bind $1 = ycsb_key(latest(record_count, issued(insert)))
  not found when rows == 0
}

// D and E: each insert writes the next key and all ten fields.
query insert {
  label "INSERT"
  sql "INSERT INTO usertable (ycsb_key, field0, field1, field2, field3, field4, field5, field6,
                              field7, field8, field9)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
  bind $1  = ycsb_key(record_count + seq())
  bind $2  = ycsb_value(field_length)
  bind $3  = ycsb_value(field_length)
  bind $4  = ycsb_value(field_length)
  bind $5  = ycsb_value(field_length)
  bind $6  = ycsb_value(field_length)
  bind $7  = ycsb_value(field_length)
  bind $8  = ycsb_value(field_length)
  bind $9  = ycsb_value(field_length)
  bind $10 = ycsb_value(field_length)
  bind $11 = ycsb_value(field_length)
  expect affected == 1
}

// E: up to 100 rows in key order from a zipfian start key; the range counts the new keys E
// expects (operation_count x 5% x 2).
query scan {
  label "SCAN"
  sql "SELECT * FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2"
  bind $1 = ycsb_key(scrambled_zipfian(0, record_count + operation_count / 10 + 1,
                                       last = record_count - 1 + issued(insert)))
  bind $2 = uniform(1, max_scan_length + 1)
  not found when rows == 0
}
