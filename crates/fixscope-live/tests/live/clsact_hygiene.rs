//! The clsact qdisc on the tc path (`AttachMode::TcFilter`), on a veth in a namespace the
//! test creates: a capture removes the qdisc only if it created it and no filter — anyone's
//! — is left on it; a qdisc that was there before stays, with its filters.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use fixscope_core::ports::PortSet;
use fixscope_live::{
    detach_leftovers, fixscope_tc_filters_on, AttachMode, LiveCapture, LiveConfig,
};
use fixscope_testkit::tc::{has_clsact, tc_filter_show};
use fixscope_testkit::{require_root, run, serial, NetnsPair};

use crate::common::{example_bin, in_netns};

fn tc_capture(dev: &str) -> LiveCapture {
    let mut cfg = LiveConfig::new(dev, PortSet::single(9878));
    cfg.attach = AttachMode::TcFilter;
    let cap = LiveCapture::open(&cfg).expect("open with tc filters");
    assert_eq!(cap.attach_kind(), "tc");
    assert_eq!(fixscope_tc_filters_on(dev).expect("query").len(), 2);
    assert!(has_clsact(dev), "our filters hang on a clsact qdisc");
    cap
}

/// A filter of someone else's: classic BPF "return 0" (matches nothing) in cls_bpf, which
/// every kernel that runs our tc path has.
fn add_foreign_filter(dev: &str, dir: &str) {
    run(
        "tc",
        &[
            "filter",
            "add",
            "dev",
            dev,
            dir,
            "prio",
            "7",
            "handle",
            "7",
            "bpf",
            "bytecode",
            "1,6 0 0 0,",
        ],
    );
}

fn assert_foreign_filter_only(dev: &str) {
    let shown = tc_filter_show(dev);
    assert!(
        shown.contains("bytecode"),
        "the foreign filter stays:\n{shown}"
    );
    assert!(!shown.contains("fxs_"), "no fixscope filter left:\n{shown}");
}

#[test]
fn a_clsact_the_capture_created_goes_with_it() {
    let _g = serial();
    require_root("a_clsact_the_capture_created_goes_with_it");
    let net = NetnsPair::create(79);
    let dev = net.veth_a.clone();
    in_netns(&net.ns_a, move || {
        assert!(!has_clsact(&dev), "a fresh veth has no clsact qdisc");
        let mut cap = tc_capture(&dev);
        cap.detach().expect("detach");
        assert!(
            !has_clsact(&dev),
            "detach removed the clsact qdisc it created"
        );
        assert!(fixscope_tc_filters_on(&dev).expect("query").is_empty());
        cap.detach().expect("a second detach does nothing");

        drop(tc_capture(&dev));
        assert!(
            !has_clsact(&dev),
            "drop removed the clsact qdisc it created"
        );
    });
}

#[test]
fn a_clsact_that_was_there_stays_with_its_filters() {
    let _g = serial();
    require_root("a_clsact_that_was_there_stays_with_its_filters");
    let net = NetnsPair::create(80);
    let dev = net.veth_a.clone();
    in_netns(&net.ns_a, move || {
        run("tc", &["qdisc", "add", "dev", &dev, "clsact"]);
        add_foreign_filter(&dev, "ingress");
        let mut cap = tc_capture(&dev);
        cap.detach().expect("detach");
        assert!(has_clsact(&dev), "the qdisc that was there stays");
        assert_foreign_filter_only(&dev);

        // Without any filter on it, a qdisc we did not create stays too.
        run("tc", &["filter", "del", "dev", &dev, "ingress"]);
        drop(tc_capture(&dev));
        assert!(has_clsact(&dev), "the qdisc that was there stays");
        assert!(tc_filter_show(&dev).trim().is_empty());
    });
}

#[test]
fn a_clsact_the_capture_created_stays_while_someone_elses_filter_is_on_it() {
    let _g = serial();
    require_root("a_clsact_the_capture_created_stays_while_someone_elses_filter_is_on_it");
    let net = NetnsPair::create(81);
    let dev = net.veth_a.clone();
    in_netns(&net.ns_a, move || {
        assert!(!has_clsact(&dev));
        let mut cap = tc_capture(&dev);
        add_foreign_filter(&dev, "egress");
        cap.detach().expect("detach");
        assert!(has_clsact(&dev), "someone else's filter keeps the qdisc");
        assert_foreign_filter_only(&dev);
    });
}

/// A tc-mode capture in another process (hold_attached), in the calling thread's network
/// namespace, once it says it is attached.
fn spawn_tc_holder(dev: &str) -> Child {
    let mut child = Command::new(example_bin("hold_attached"))
        .args([dev, "9878", "tc", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn hold_attached");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    if !line.starts_with("ATTACHED tc ") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("hold_attached said {line:?}");
    }
    child
}

/// Kills a holder with SIGKILL: its filters stay, and nothing of the process is left.
fn sigkill(mut child: Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
}

/// Issue 36 item 12: `fixscope detach` after a killed capture removes the clsact qdisc when
/// that capture created it and no filter is left; one that was there before stays.
#[test]
fn detach_leftovers_removes_the_clsact_a_killed_capture_created() {
    let _g = serial();
    require_root("detach_leftovers_removes_the_clsact_a_killed_capture_created");
    let net = NetnsPair::create(82);
    let dev = net.veth_a.clone();
    in_netns(&net.ns_a, move || {
        // Created by the killed capture, nothing else on it: removed.
        assert!(!has_clsact(&dev), "a fresh veth has no clsact qdisc");
        sigkill(spawn_tc_holder(&dev));
        assert_eq!(fixscope_tc_filters_on(&dev).expect("query").len(), 2);
        assert_eq!(detach_leftovers(&dev).expect("detach_leftovers"), 2);
        assert!(
            !has_clsact(&dev),
            "detach removed the clsact qdisc the killed capture created:\n{}",
            run("tc", &["qdisc", "show", "dev", &dev])
        );

        // Created by the killed capture, but someone's filter is on it: stays.
        sigkill(spawn_tc_holder(&dev));
        add_foreign_filter(&dev, "ingress");
        assert_eq!(detach_leftovers(&dev).expect("detach_leftovers"), 2);
        assert!(has_clsact(&dev), "someone else's filter keeps the qdisc");
        assert_foreign_filter_only(&dev);

        // There before the capture (and now without any filter): stays.
        run("tc", &["filter", "del", "dev", &dev, "ingress"]);
        sigkill(spawn_tc_holder(&dev));
        assert_eq!(detach_leftovers(&dev).expect("detach_leftovers"), 2);
        assert!(has_clsact(&dev), "a qdisc the capture found stays");
        assert!(tc_filter_show(&dev).trim().is_empty());

        // A second tc capture still refuses to join a leftover, whoever made the qdisc.
        run("tc", &["qdisc", "del", "dev", &dev, "clsact"]);
        let holder = spawn_tc_holder(&dev);
        let mut cfg = LiveConfig::new(dev.as_str(), PortSet::single(9878));
        cfg.attach = AttachMode::TcFilter;
        let second = LiveCapture::open(&cfg);
        sigkill(holder);
        assert!(
            second.is_err(),
            "a second tc capture attached beside the first"
        );
        assert_eq!(detach_leftovers(&dev).expect("detach_leftovers"), 2);
        assert!(!has_clsact(&dev));
    });
}
