//! The one integration test binary (one link on a 2-core CI): each module
//! below was a test binary of its own.

mod cli;
mod common;
mod cost_honest;
mod cost_html;
mod cost_model;
mod cost_sim;
mod cost_usage;
mod hostile_input;
mod ladder;
mod ladder_late;
mod layering;
mod linear;
mod mock_server;
mod model;
mod never_silent;
mod pipeline;
mod pipeline_props;
mod probe_ladder;
mod profiles;
mod public_validity;
mod readme;
mod real_cli;
mod records;
mod records_free;
mod records_honest;
mod robustness;
mod send;
mod send_safety;
mod shape_agents;
mod shape_mcp;
mod shape_sessions;
mod stats;
mod system_side;
mod user_reads;
mod verify;
