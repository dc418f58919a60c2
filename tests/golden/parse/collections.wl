param empty_list = []
param list = [1, 2.5, "three", four, [5, 6]]
param trailing = [1, 2,]
param empty_map = {}
param map = { "Accept": "application/json", key: 1, "nested": { a: [1, 2] }, }
param env1 = env("PGPASSWORD")
param env2 = env("PGPASSWORD", "postgres")
param env3 = env("PORT", 5432)
