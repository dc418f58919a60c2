// ksqlDB quickstart "orders": the records `ksql-datagen quickstart=orders` produces.
//
// ksql-datagen (confluentinc/ksql, ksqldb-examples) generates orders from the Avro schema
// `ksql.orders` (orders_schema.avro) with avro-random-generator annotations:
//
//   ordertime   BIGINT  uniform epoch milliseconds in [1487715775521, 1519273364600),
//                       i.e. 2017-02-21T22:22:55.521Z up to 2018-02-22T04:22:44.600Z
//   orderid     INT     0, 1, 2, ... one per record (also the record key, KAFKA format)
//   itemid      STRING  regex Item_[1-9][0-9]{0,2}: Item_1 .. Item_999
//   orderunits  DOUBLE  uniform in [0.1, 10.0)
//   address     STRUCT<city STRING, state STRING, zipcode BIGINT>
//                 city    regex City_[1-9]{0,2}  (the digit suffix may be empty)
//                 state   regex State_[1-9]{0,2}
//                 zipcode uniform in [10000, 99999)
//
// Here the struct is flattened into address_city, address_state and address_zipcode, since a
// generated row is flat. The regex columns have the same domain as in ksql-datagen; datagen walks
// the regex automaton (Generex) and stops at an accepting state with probability about 0.3, so
// the frequency of each suffix length follows wlrun's `pattern` generator rather than Generex.
// With one datagen thread orderids are unique; several threads would each restart at 0.
//
//   import "std/ksql/orders.wl" as ksql (order_count = 1_000_000)
//   ... rows ksql.orders ...
//
// (The row count param is `order_count` because params and schemas share one namespace.)

param order_count = 100_000    // ksql-datagen --iterations (its default, -1, never stops)

schema orders {
  table "orders"
  rows order_count

  field ordertime:       long    = uniform(1487715775521, 1519273364600)
  field orderid:         int     = seq(start = 0)
  field itemid:          varchar = pattern("Item_[1-9][0-9]{0,2}")
  field orderunits:      double  = uniform(0.1, 10.0)
  field address_city:    varchar = pattern("City_[1-9]{0,2}")
  field address_state:   varchar = pattern("State_[1-9]{0,2}")
  field address_zipcode: long    = uniform(10000, 99999)
}
