// a series key over 2^63 - 1 series (gen allocated every key): E0203
target db { null }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..9223372036854775807
}
ingest load { into db via null  rows s }
