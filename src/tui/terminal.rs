pub struct TerminalGuard;
impl TerminalGuard { pub fn enter() -> std::io::Result<Self> { Ok(Self) } pub fn restore(&mut self) -> std::io::Result<()> { Ok(()) } }
