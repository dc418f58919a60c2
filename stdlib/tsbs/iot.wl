// TSBS iot: the data set of `tsbs_generate_data --use-case=iot` (timescale/tsbs; the questdb/tsbs
// fork has the same generator): trucks with 8 tags fixed per truck, a `readings` row and a
// `diagnostics` row per truck per interval, every field a clamped random walk or a draw.
//
//   rows     = trucks x floor((end - start) / interval) per table, readings and diagnostics
//   tags     = one row per truck: the tags table of TSBS's TimescaleDB format
//
// The trucks' tags are drawn once, in `tags`, and `readings` and `diagnostics` take them
// (`series from tags`): truck_7 is in the same fleet, with the same driver and model, in all
// three tables. The capacities follow the model, as in TSBS (F-150: 2000/200/15, G-2000:
// 5000/300/19, H-2: 1500/150/12).
//
// Where this file differs from TSBS's generator, said here rather than hidden:
//   * the values are TSBS's distributions drawn from wlrun's own streams (docs/rng.md §7), so
//     not TSBS's numbers for the same seed;
//   * the realism layer is TSBS's in its shares: one field of 10% of the rows null and one tag
//     of 1% (`null one of`; the fields' shares as TSBS's slot modulo the field count gives
//     them), 19% of the rows sent late by a median of 12 rows (`late`). The ~10% of rows TSBS
//     drops (missing batches and entries) are not dropped: every row is sent, and the tables
//     hold trucks x epochs rows.
//
// Import it with the scale and time range you want:
//
//   import "std/tsbs/iot.wl" as iot (trucks = 1000, end = 2016-01-03T00:00:00Z)
//   ingest readings { into questdb via ilp_tcp  rows iot.readings  batch 10_000 rows }

param trucks   = 100                     // tsbs --scale
param start    = 2016-01-01T00:00:00Z    // tsbs --timestamp-start
param end      = 2016-01-02T00:00:00Z    // tsbs --timestamp-end (exclusive)
param interval = 10s                     // tsbs --log-interval

// The trucks: TSBS's tags, in its order. One row per truck.
schema tags {
  table "tags"
  series name: symbol = format("truck_%d", n) for n in 0..trucks
  tag fleet:          symbol = pick(["East", "West", "North", "South"])
  tag driver:         symbol = pick(["Derek", "Rodney", "Albert", "Andy", "Seth", "Trish"])
  tag model:          symbol = pick(["F-150", "G-2000", "H-2"])
  tag device_version: symbol = pick(["v1.0", "v1.5", "v2.0", "v2.3"])
  // TSBS's float32 tags; its QuestDB and Influx formats send them as fields, so they are fields
  // here, drawn once per truck.
  field load_capacity:            double = pick_by(model, {"F-150": [2000.0], "G-2000": [5000.0], "H-2": [1500.0]}) per series
  field fuel_capacity:            double = pick_by(model, {"F-150": [200.0], "G-2000": [300.0], "H-2": [150.0]}) per series
  field nominal_fuel_consumption: double = pick_by(model, {"F-150": [15.0], "G-2000": [19.0], "H-2": [12.0]}) per series
}

// Measurement `readings`: where each truck is and how it drives.
schema readings {
  table "readings"
  series from tags
  field latitude:         double = walk(uniform(0.0, 90.0), uniform(-0.005, 0.005), clamp = -90..90, decimals = 5)
  field longitude:        double = walk(uniform(0.0, 180.0), uniform(-0.005, 0.005), clamp = -180..180, decimals = 5)
  field elevation:        double = walk(uniform(0.0, 500.0), uniform(-10.0, 10.0), clamp = 0..5000, decimals = 0)
  field velocity:         double = walk(0.0, uniform(-10.0, 10.0), clamp = 0..100, decimals = 0)
  field heading:          double = walk(uniform(0.0, 360.0), uniform(-5.0, 5.0), clamp = 0..360, decimals = 0)
  field grade:            double = walk(0.0, uniform(-5.0, 5.0), clamp = 0..100, decimals = 0)
  field fuel_consumption: double = walk(25.0, uniform(-5.0, 5.0), clamp = 0..50, decimals = 1)
  timestamp time: timestamp(ns) = every interval from start to end
  // TSBS's realism layer: one field of 10% of the rows null, one tag of 1%, 19% of the rows late.
  null one of [latitude, longitude, elevation, velocity, heading, grade, fuel_consumption] 10%
  null one of [name, fleet, driver, model, device_version, load_capacity, fuel_capacity, nominal_fuel_consumption] 1%
  late 19% by 12 rows
}

// Measurement `diagnostics`: fuel, load and the device's status.
schema diagnostics {
  table "diagnostics"
  series from tags
  // TSBS refuels the tick the tank would sit empty, and holds the load but for a 5% jump to a
  // fresh U[0, 5000) truncated to 0 decimals (the integers 0..4999, uniformly).
  field fuel_state:   double = walk(1.0, uniform(-0.001, 0.0), clamp = 0..1, decimals = 1, refill = 1.0)
  field current_load: double = hold(0.0, uniform(0, 5000), 5%)
  field status:       long   = walk(0.0, normal(0.0, 1.0), clamp = 0..5)
  timestamp time: timestamp(ns) = every interval from start to end
  // TSBS draws a field slot in 0..7 and takes it modulo the 3 fields: fuel_state 3/7, the
  // others 2/7 each, which the list's repetitions say.
  null one of [fuel_state, current_load, status, fuel_state, current_load, status, fuel_state] 10%
  null one of [name, fleet, driver, model, device_version, load_capacity, fuel_capacity, nominal_fuel_consumption] 1%
  late 19% by 12 rows
}
