// `replay when CONDITION` takes the matrix's axis; `link BANDWIDTH` names a link to compute a ceiling for.
ingest load {
  into questdb via qwp
  rows tsbs.cpu
  replay when input == replay budget 512MiB
  link 14.7gbit
}
ingest plain {
  into questdb via ilp_tcp
  rows tsbs.cpu
  replay
  link 10Gbit/s
}
param links = [100mbit, 1gbit, 512kbit, 2.5Tbit, 9600bit]
