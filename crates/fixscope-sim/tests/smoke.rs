mod common;
use common::*;

#[test]
fn smoke() {
    let ex = Exchange::start(&[]);
    let r = client(ex.addr, &["--count", "100", "--window", "4"]);
    println!("{r}");
    let s = ex.stop();
    println!("{s}");
    assert_eq!(r.filled_orders, 100);
}
