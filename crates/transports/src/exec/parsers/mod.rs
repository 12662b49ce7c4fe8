//! One module per program (or family) whose output wirebench reads; each
//! is tested on real output of that program.

pub mod crimson;
pub mod fio;
pub mod generic;
pub mod redis_benchmark;
pub mod sockperf;
pub mod tateyama;
