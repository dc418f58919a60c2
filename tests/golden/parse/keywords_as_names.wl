// Keywords are not reserved as names: only true, false, none, and, or, not, in are.
param table = 1
param timestamp = 2
param rows = table + timestamp
param importer = 3
param as_of = 4
param inline = 5
param nothing_here = none
param notable = 6
param order = 7
schema series {
  table "t"
  field table: long = 1
  field every: long = 2
  timestamp timestamp = every 1s from 2016-01-01T00:00:00Z for 1m
}
