//! The express lane where there are no unix pipes to relay bytes between
//! (or in a build with `--cfg askgate_portable`): no upstream has a lane,
//! and every call goes through rmcp with the same decisions. The lane
//! itself is `express.rs`.

/// An upstream's express lane: never open here.
#[derive(Debug)]
pub(crate) enum Lane {}

impl Lane {
    /// Whether the lane takes calls: never.
    pub(crate) fn is_open(&self) -> bool {
        match *self {}
    }

    /// Whether the upstream's output ended: there is no lane to see it.
    pub(crate) fn has_ended(&self) -> bool {
        match *self {}
    }

    /// Leave every call on the lane: there are none.
    pub(crate) fn abandon(&self) {
        match *self {}
    }

    /// Note the upstream's revision: there is no lane to note it on.
    pub(crate) fn negotiated(&self, _version: &str) {
        match *self {}
    }

    /// Limit its calls' time: there are none.
    pub(crate) fn limit(self: &std::sync::Arc<Self>, _timeout: Option<std::time::Duration>) {
        match **self {}
    }
}

impl Lane {
    /// Send a call its handler decided on the lane: there is no lane.
    pub(crate) fn send_decided(
        self: &std::sync::Arc<Self>,
        _call: crate::proxy::on_lane::LaneSend,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = crate::relay::Response> + Send>> {
        match **self {}
    }
}
