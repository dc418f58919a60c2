hook pull from "ksql-pull.rhai" (init, request, response)
hook bare from "bare.rhai"
hook one from "one.rhai" (request,)
