#[test]
fn smoke() {
    let path = std::env::var("WL").unwrap();
    let mut map = wlrun::source::SourceMap::new();
    let (id, _) = map.load_disk(std::path::Path::new(&path));
    match wlrun::syntax::parse(&map, id) {
        Ok(f) => println!("{}", wlrun::syntax::sexpr::file(&f)),
        Err(d) => println!("{}", wlrun::diag::render(&map, &d)),
    }
}
