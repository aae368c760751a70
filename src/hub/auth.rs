//! (auth: tokens file)
