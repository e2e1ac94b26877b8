//! A `tracing` subscriber that records every event (target, level, fields as
//! text), for the tests that check what netproto logs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: where, how loud, and every field as text (`message` included).
#[derive(Clone, Debug)]
#[allow(dead_code, reason = "each test file reads the fields it checks")]
pub(crate) struct Captured {
    pub(crate) target: String,
    pub(crate) level: Level,
    pub(crate) fields: BTreeMap<String, String>,
}

impl Captured {
    pub(crate) fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }

    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

/// Records every event; no spans.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<Captured>>>);

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let captured = Captured {
            target: event.metadata().target().into(),
            level: *event.metadata().level(),
            fields,
        };
        self.0.lock().expect("not poisoned").push(captured);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

impl Capture {
    /// The events so far, emptied.
    pub(crate) fn take(&self) -> Vec<Captured> {
        std::mem::take(&mut *self.0.lock().expect("not poisoned"))
    }
}
