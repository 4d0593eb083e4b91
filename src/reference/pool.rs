//! Pooling over NHWC tensors: max (with where each maximum came from), average and global
//! average, and their gradients (scattered back, the reverse of the kernels' gathers).
//! Windows are clipped to the input ("same" padding takes no part).

use crate::reference::conv2d::ConvShape;

/// A pooling's shape: input (batch, h, w, c), window (kh, kw), strides, "same" padding or
/// "valid".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named as the module docs name them
pub struct PoolShape {
    pub batch: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub same: bool,
}

impl PoolShape {
    /// (oh, ow).
    pub fn out(&self) -> (usize, usize) {
        (
            ConvShape::axis(self.h, self.kh, self.sh, 1, self.same).0,
            ConvShape::axis(self.w, self.kw, self.sw, 1, self.same).0,
        )
    }

    /// Visits every output with the input indices of its clipped window, row-major.
    fn each(&self, mut f: impl FnMut(usize, &[usize])) {
        let (oh, ow) = self.out();
        let ph = ConvShape::axis(self.h, self.kh, self.sh, 1, self.same).1;
        let pw = ConvShape::axis(self.w, self.kw, self.sw, 1, self.same).1;
        let mut window = Vec::new();
        for n in 0..self.batch {
            for i in 0..oh {
                for j in 0..ow {
                    for ch in 0..self.c {
                        window.clear();
                        for a in 0..self.kh {
                            for b in 0..self.kw {
                                let hi = (i * self.sh + a) as isize - ph;
                                let wi = (j * self.sw + b) as isize - pw;
                                if (0..self.h as isize).contains(&hi)
                                    && (0..self.w as isize).contains(&wi)
                                {
                                    window.push(
                                        ((n * self.h + hi as usize) * self.w + wi as usize)
                                            * self.c
                                            + ch,
                                    );
                                }
                            }
                        }
                        f(((n * oh + i) * ow + j) * self.c + ch, &window);
                    }
                }
            }
        }
    }

    fn y_len(&self) -> usize {
        let (oh, ow) = self.out();
        self.batch * oh * ow * self.c
    }
}

/// Max pooling: each output's maximum and the input index of its first occurrence.
pub fn maxpool(x: &[f32], s: &PoolShape) -> (Vec<f64>, Vec<usize>) {
    let (mut y, mut arg) = (vec![0.0; s.y_len()], vec![0; s.y_len()]);
    s.each(|o, win| {
        let mut best = win[0];
        for &i in &win[1..] {
            if x[i] > x[best] {
                best = i;
            }
        }
        y[o] = x[best] as f64;
        arg[o] = best;
    });
    (y, arg)
}

/// Max pooling's input gradient: each output's gradient sent to where its maximum was.
pub fn maxpool_backward(dy: &[f32], arg: &[usize], x_len: usize) -> Vec<f64> {
    let mut dx = vec![0.0; x_len];
    for (o, &i) in arg.iter().enumerate() {
        dx[i] += dy[o] as f64;
    }
    dx
}

/// Average pooling (the mean of each clipped window).
pub fn avgpool(x: &[f32], s: &PoolShape) -> Vec<f64> {
    let mut y = vec![0.0; s.y_len()];
    s.each(|o, win| {
        y[o] = win.iter().map(|&i| x[i] as f64).sum::<f64>() / win.len() as f64;
    });
    y
}

/// Average pooling's input gradient: each output's gradient spread over its window.
pub fn avgpool_backward(dy: &[f32], s: &PoolShape) -> Vec<f64> {
    let mut dx = vec![0.0; s.batch * s.h * s.w * s.c];
    s.each(|o, win| {
        for &i in win {
            dx[i] += dy[o] as f64 / win.len() as f64;
        }
    });
    dx
}

/// Global average pooling of (batch, positions, c) to (batch, c).
pub fn global_avgpool(x: &[f32], batch: usize, positions: usize, c: usize) -> Vec<f64> {
    let mut y = vec![0.0; batch * c];
    for n in 0..batch {
        for p in 0..positions {
            for ch in 0..c {
                y[n * c + ch] += x[(n * positions + p) * c + ch] as f64 / positions as f64;
            }
        }
    }
    y
}

/// Its input gradient.
pub fn global_avgpool_backward(dy: &[f32], batch: usize, positions: usize, c: usize) -> Vec<f64> {
    (0..batch * positions * c)
        .map(|i| dy[(i / (positions * c)) * c + i % c] as f64 / positions as f64)
        .collect()
}
