//! The NAIC face: the API that NAIC's frontend (NAICNO/vm-provision-frontend) calls under
//! `/api`, with NAIC's shapes, over the same application layer as `/api/v1`.

pub mod status;
