matrix {
  protocol in [qwp, ilp_tcp, ilp_http]
  hosts    in [1000, 4000]
  workers  in 1..4
  ack      in [publish, per_batch] when protocol == qwp
  exclude protocol == ilp_tcp and hosts == 4000
  exclude workers == 3
}
matrix {}
