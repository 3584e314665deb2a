//! `hc_web::serve` at its own API, on 127.0.0.1 with a real project and
//! engine: every request needs the token (once in the address, then the
//! cookie it sets), the address opens once, and a change from another
//! origin is refused. (The page itself is driven in real Chromium by
//! `hc`'s tests.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One HTTP/1.1 request; the status code, and the whole response.
fn request(port: u16, head: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(format!("{head}Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, out)
}

#[test]
fn the_token_opens_the_page_once_then_only_its_cookie_and_another_origin_cannot_change_anything() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // the one test of this binary: the project is found from here
    std::env::set_current_dir(&root).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let token_file = root.join("token");
    let options = hc_web::Options {
        port,
        host: "127.0.0.1".into(),
        open: false,
        token_files: vec![token_file.clone()],
        no_contain: true,
        agent: None,
        allow_host: Vec::new(),
    };
    std::thread::spawn(move || hc_web::serve(options, &hc_host::confirm::NoOne));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    // without the token: nothing
    assert_eq!(request(port, "GET / HTTP/1.1\r\n").0, 401);
    assert_eq!(request(port, "GET /api/trace/x HTTP/1.1\r\n").0, 401);
    // the address with the token: a cookie, once
    let (code, opened) = request(port, &format!("GET /?token={token} HTTP/1.1\r\n"));
    assert_eq!(code, 303, "{opened}");
    let cookie = opened
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or(l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    assert!(opened.to_lowercase().contains("httponly"), "{opened}");
    let again = request(port, &format!("GET /?token={token} HTTP/1.1\r\n"));
    assert_eq!(again.0, 401, "{}", again.1);
    // the cookie opens the page and the API
    let (code, page) = request(port, &format!("GET / HTTP/1.1\r\nCookie: {cookie}\r\n"));
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("<html"), "{page}");
    // a change from another origin is refused, cookie or not
    let post = format!(
        "POST /api/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\
         Origin: http://evil.example\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(post.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap_or_default();
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
}
