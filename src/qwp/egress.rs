//! QWP queries on `/read/v1`: encoding QUERY_REQUEST and decoding the server's frames.
