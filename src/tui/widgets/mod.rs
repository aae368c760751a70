//! Small drawing helpers shared by the views: text that fits (ellipsis, control characters
//! neutralised), proportional bars, and a table that draws only the rows it is handed.

pub mod bar;
pub mod table;
pub mod text;
