//! Compile-time rejections of `#[derive(NetMessage)]`: one case per rule, each `.stderr`
//! showing the message and the token it points at.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/**/*.rs");
}
