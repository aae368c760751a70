//! (listen: tcp, tls, unix)
