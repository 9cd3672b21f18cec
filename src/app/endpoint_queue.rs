//! Endpoints waiting for their first check: the operations that set endpoints ask for them here,
//! and the check schedule (`service::endpoint_checks`) takes them as soon as it wakes.

use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::store::endpoints::Target;

/// Endpoints waiting for a check that was asked for (they were just set).
#[derive(Default)]
pub struct EndpointQueue {
    asked: Mutex<Vec<Target>>,
    wake: Notify,
}

impl EndpointQueue {
    /// Asks for these endpoints to be checked as soon as possible (a server without a running
    /// schedule, a replica, never takes them; it never sets endpoints either).
    pub fn request(&self, targets: Vec<Target>) {
        if targets.is_empty() {
            return;
        }
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).extend(targets);
        self.wake.notify_one();
    }

    /// The endpoints asked for since the last look.
    pub(crate) fn take(&self) -> Vec<Target> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Resolves when endpoints are asked for.
    pub(crate) fn woken(&self) -> Notified<'_> {
        self.wake.notified()
    }
}
