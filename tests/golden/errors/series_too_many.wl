// A series key over 2^63 - 1 series passed check and plan; `gen` then allocated every key.
target db { null }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..9223372036854775807
}
ingest load { into db via null  rows s }
