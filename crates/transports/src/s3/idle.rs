//! A connection that fails its pending read or write once nothing has
//! moved either way for the idle timeout: how the fake S3 server closes
//! keep-alive connections left idle, and peers that stop reading.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub struct IdleIo<T> {
    inner: T,
    idle: Duration,
    /// When bytes last moved.
    last: Instant,
    timer: Pin<Box<Sleep>>,
}

impl<T> IdleIo<T> {
    pub fn new(inner: T, idle: Duration) -> IdleIo<T> {
        let last = Instant::now();
        IdleIo {
            inner,
            idle,
            last,
            timer: Box::pin(tokio::time::sleep_until(last + idle)),
        }
    }

    /// A pending operation: an error once idle too long, else the timer
    /// armed (it wakes the task when the idle time would end).
    fn check(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            let deadline = self.last + self.idle;
            if self.timer.deadline() != deadline {
                self.timer.as_mut().reset(deadline);
            }
            match self.timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if Instant::now() >= deadline => {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("idle for {:?}", self.idle),
                    ));
                }
                Poll::Ready(()) => {}
            }
        }
    }

    fn moved(&mut self, n: usize) {
        if n > 0 {
            self.last = Instant::now();
        }
    }
}

use std::future::Future;

impl<T: AsyncRead + Unpin> AsyncRead for IdleIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.moved(buf.filled().len() - before);
                Poll::Ready(r)
            }
            Poll::Pending => this.check(cx).map(Err),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for IdleIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                if let Ok(n) = &r {
                    this.moved(*n);
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.check(cx).map(Err),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => this.check(cx).map(Err),
            r => r,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                if let Ok(n) = &r {
                    this.moved(*n);
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.check(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_silent_peer_times_out_and_a_talking_one_does_not() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut io = IdleIo::new(a, Duration::from_secs(10));
        let mut buf = [0u8; 8];
        let talker = async {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(6)).await;
                b.write_all(b"x").await.unwrap();
            }
            b
        };
        let reader = async {
            for _ in 0..5 {
                assert_eq!(io.read(&mut buf).await.unwrap(), 1);
            }
            let t0 = Instant::now();
            let e = io.read(&mut buf).await.unwrap_err();
            (e.kind(), Instant::now() - t0)
        };
        let (_b, (kind, waited)) = tokio::join!(talker, reader);
        assert_eq!(kind, io::ErrorKind::TimedOut);
        assert_eq!(waited, Duration::from_secs(10));
    }
}
