//! The registry: every consumer of order events, in one place.
//!
//! [`Consumers`] holds one of each, built from the run's flags, and is itself a
//! [`Consumer`]: each call goes to every registered consumer in the order listed. The
//! pipeline, the two-stage hand-over and the shard merger only ever call the registry, so a
//! new consumer is a module of its own and **one line in the list below** — see
//! docs/architecture.md, "Adding a consumer". Dispatch is static (a struct field per
//! consumer, no boxes): the hot path costs what the consumers themselves cost.

mod group;
pub mod sessions;
pub mod stages;

use crate::consumer::{Consumer, ConsumerConfig, GlobalSession};
use crate::group::GroupStats;
use crate::slowest::SlowestOrders;
use fixscope_model::order::OrderEvent;

pub use sessions::{SessionLatencies, SessionLatency, SessionLatencyFigures};
pub use stages::{StageFigures, StageRecorders};

/// Declares the registry: a struct with one field per consumer, the interval that crosses
/// threads with one part per consumer, and the [`Consumer`] impl calling each in turn.
macro_rules! registry {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty, )*) => {
        /// Every consumer of the run's order events.
        pub struct Consumers {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        /// One interval of every consumer, on its way between threads.
        pub struct ConsumersInterval {
            $( $name: <$ty as Consumer>::Interval, )*
        }

        /// Every consumer's figures, read-only, for one report.
        #[derive(Clone, Copy)]
        pub struct ConsumerFigures<'a> {
            $( $(#[$doc])* pub $name: <$ty as Consumer>::Figures<'a>, )*
        }

        impl Consumer for Consumers {
            type Interval = ConsumersInterval;
            type Figures<'a> = ConsumerFigures<'a>;

            fn figures(&self) -> ConsumerFigures<'_> {
                ConsumerFigures { $( $name: self.$name.figures(), )* }
            }

            fn build(config: &ConsumerConfig) -> Self {
                Consumers { $( $name: <$ty as Consumer>::build(config), )* }
            }

            #[inline]
            fn on_order(&mut self, event: &OrderEvent<'_>) {
                $( self.$name.on_order(event); )*
            }

            fn empty_interval(&self) -> ConsumersInterval {
                ConsumersInterval { $( $name: self.$name.empty_interval(), )* }
            }

            fn close_interval(&mut self) {
                $( self.$name.close_interval(); )*
            }

            fn refresh(&mut self) {
                $( self.$name.refresh(); )*
            }

            fn reset_interval(&mut self) {
                $( self.$name.reset_interval(); )*
            }

            fn reset_all(&mut self) {
                $( self.$name.reset_all(); )*
            }

            fn merge_from(&mut self, other: &Self) {
                $( self.$name.merge_from(&other.$name); )*
            }

            fn hand_over(&mut self, out: &mut ConsumersInterval) {
                $( self.$name.hand_over(&mut out.$name); )*
            }

            fn take_over(&mut self, from: &mut ConsumersInterval) {
                $( self.$name.take_over(&mut from.$name); )*
            }

            fn give_back(&mut self, to: &mut ConsumersInterval) {
                $( self.$name.give_back(&mut to.$name); )*
            }

            fn absorb(
                &mut self,
                from: &mut ConsumersInterval,
                global: &mut dyn FnMut(u64) -> GlobalSession,
            ) {
                $( self.$name.absorb(&mut from.$name, global); )*
            }

            fn adopt_folded(&mut self, reported: &mut Self) {
                $( self.$name.adopt_folded(&mut reported.$name); )*
            }
        }
    };
}

registry! {
    /// Per stage and request type, interval and run (`consumers/stages.rs`).
    stages: StageRecorders,
    /// Per session: first response and the breakdown stages (`consumers/sessions.rs`).
    session_latency: SessionLatencies,
    /// The N slowest orders per stage (`slowest.rs`, `--slowest`).
    slowest: SlowestOrders,
    /// Latency by the orders' own fields (`group/`, `--by`).
    by: Option<GroupStats>,
}
