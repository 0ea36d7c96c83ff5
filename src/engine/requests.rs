//! The request templates of a run, one set per node of the target: every request carries
//! the Host header of the node it is sent to (a proxy or load balancer in front of each
//! node routes by it), the connection picking the set of the node its stream is open to
//! (its own node, the node the route moved it to, a redirect's node). Built once per
//! process before the threads start (each thread takes a copy); the sets of one operation
//! share its turn count and pools, so turns go round over all nodes as over one.

use super::EnginePlan;
use crate::template::{Common, Template};

/// One template per (node, operation): `templates[node * ops + op]`. A single-address
/// run has one set, built from the plan's target as before.
#[derive(Clone)]
pub(super) struct Requests {
    templates: Vec<Template>,
    ops: usize,
}

impl Requests {
    pub(super) fn build(plan: &EnginePlan) -> Requests {
        let common = plan.common();
        let first: Vec<Template> = plan
            .ops
            .iter()
            .map(|o| Template::build(&o.request, &common))
            .collect();
        let ops = first.len();
        if plan.nodes.targets.is_empty() {
            return Requests {
                templates: first,
                ops,
            };
        }
        let mut templates = Vec::with_capacity(plan.nodes.targets.len() * ops);
        for t in &plan.nodes.targets {
            let node = Common {
                host: t.host_header(),
                ..common.clone()
            };
            templates.extend(
                plan.ops
                    .iter()
                    .zip(&first)
                    .map(|(o, f)| Template::build(&o.request, &node).sharing_turns_with(f)),
            );
        }
        Requests { templates, ops }
    }

    /// The template of operation `op` for a stream open to `node`.
    #[inline]
    pub(super) fn get(&mut self, node: usize, op: usize) -> &mut Template {
        let k = node * self.ops + op;
        if k < self.templates.len() {
            &mut self.templates[k]
        } else {
            &mut self.templates[op]
        }
    }
}
