; ---- Loom reduction kernel cf1_softmax (from "cf1_softmax"), LLVM IR for the host ----
; host schedule: 16 lanes per vector; 256 tasks of 16; out0 holds the operand of reduction 1 between its pass and the output pass
; reduction: row (chunks of 8192, 256 lanes of runs of 4, butterfly, pairwise over chunks) order, 2 stage(s), 1 element output(s)
; reduction 0: max float32 -> float32 (test_llvm_golden.cpp:121), stage 0
; reduction 1: sum float32 -> float32 (test_llvm_golden.cpp:121), stage 1
; element space:
; space: rank 2, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; in1: input 1, float32, strided dims {0}
; in2: input 2, float32, strided dims {0}
; out0: float32, contiguous
; out1: float32, contiguous
; out2: float32, contiguous

; row order, stage 0: the partial of chunk k of row o
;   reduction 0: max float32 -> float32 (test_llvm_golden.cpp:121)
define internal void @cf1_softmax.chunk.s0(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr noalias %part) #0 {
entry:
  %lanes0 = alloca [256 x float], align 64
  %init.slot = alloca i64
  %i.slot = alloca i64
  %active.slot = alloca i64
  %s.slot = alloca i64
  %bf.l.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 64
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 72
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 80
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 112
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %part1.at = getelementptr inbounds i8, ptr %p, i64 120
  %part1 = load ptr, ptr %part1.at, align 8                                  ; split workspace of reduction 1
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 "x" float32, contiguous (test_llvm_golden.cpp:121)
  %el.in1.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.in1 = load ptr, ptr %el.in1.at, align 8                                ; input 1 "row value 0" float32, strided (test_llvm_golden.cpp:121)
  %el.in2.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.in2 = load ptr, ptr %el.in2.at, align 8                                ; input 2 "row value 1" float32, strided (test_llvm_golden.cpp:121)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 24
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.out1.at = getelementptr inbounds i8, ptr %p, i64 32
  %el.out1 = load ptr, ptr %el.out1.at, align 8                              ; output 1, contiguous
  %el.out2.at = getelementptr inbounds i8, ptr %p, i64 40
  %el.out2 = load ptr, ptr %el.out2.at, align 8                              ; output 2, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 48
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  %el.ext1.at = getelementptr inbounds i8, ptr %p, i64 52
  %el.ext1 = load i32, ptr %el.ext1.at, align 4                              ; extent of dimension 1
  %el.ext1.i64 = sext i32 %el.ext1 to i64
  %el.in1_s0.at = getelementptr inbounds i8, ptr %p, i64 56
  %el.in1_s0 = load i32, ptr %el.in1_s0.at, align 4                          ; in1 stride of dimension 0
  %el.in1_s0.i64 = sext i32 %el.in1_s0 to i64
  %el.in2_s0.at = getelementptr inbounds i8, ptr %p, i64 60
  %el.in2_s0 = load i32, ptr %el.in2_s0.at, align 4                          ; in2 stride of dimension 0
  %el.in2_s0.i64 = sext i32 %el.in2_s0 to i64
  ; chunk k of row o: elements [8192 k, min(L, 8192 (k + 1))); element i goes to lane (i / 4) mod 256
  %first = mul i64 %k, 8192
  %rest = sub i64 %len, %first
  %n = call i64 @llvm.umin.i64(i64 %rest, i64 8192)                          ; elements in this chunk
  %runs = add i64 %n, 3
  %runs4 = lshr i64 %runs, 2
  %active = call i64 @llvm.umin.i64(i64 %runs4, i64 256)                     ; lanes holding elements
  %rowbase = mul i64 %o, %len                                                ; flat index of (o, 0)
  ; every lane starts at the identity
  store i64 0, ptr %init.slot
  br label %init.cond
init.cond:
  %init = load i64, ptr %init.slot
  %init.more = icmp ult i64 %init, 256
  br i1 %init.more, label %init.body, label %init.done
init.body:
  %init.p = getelementptr inbounds float, ptr %lanes0, i64 %init
  store <16 x float> splat (float 0xFFF0000000000000), ptr %init.p, align 4
  %init.next = add i64 %init, 16
  store i64 %init.next, ptr %init.slot
  br label %init.cond
init.done:
  store i64 0, ptr %i.slot
  ; blocks of 64 elements: 16 lanes, each taking its run of 4 in order; the values are computed as 4 vectors of 16 consecutive elements and deinterleaved into runs
  br label %block.w64.cond
block.w64.cond:
  %block.w64 = load i64, ptr %i.slot
  %block.w64.next = add i64 %block.w64, 64
  %block.w64.more = icmp ule i64 %block.w64.next, %n                         ; a whole step of 64 left
  br i1 %block.w64.more, label %block.w64.body, label %block.w64.done
block.w64.body:
  %r = add i64 %first, %block.w64                                            ; reduced index
  %b0.flat = add i64 %rowbase, %r
  %el.b0.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b0.flat
  %el.b0.v0.m = load <16 x float>, ptr %el.b0.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %b1.r = add i64 %r, 16
  %b1.flat = add i64 %rowbase, %b1.r
  %el.b1.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b1.flat
  %el.b1.v0.m = load <16 x float>, ptr %el.b1.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %b2.r = add i64 %r, 32
  %b2.flat = add i64 %rowbase, %b2.r
  %el.b2.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b2.flat
  %el.b2.v0.m = load <16 x float>, ptr %el.b2.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %b3.r = add i64 %r, 48
  %b3.flat = add i64 %rowbase, %b3.r
  %el.b3.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b3.flat
  %el.b3.v0.m = load <16 x float>, ptr %el.b3.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %l4 = lshr i64 %block.w64, 2
  %lanes.at = and i64 %l4, 255                                               ; first lane of the block: (i / 4) mod 256
  ; reduction 0: max float32 -> float32 (test_llvm_golden.cpp:121)
  %x0.u0 = shufflevector <16 x float> %el.b0.v0.m, <16 x float> %el.b1.v0.m, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %x0.u1 = shufflevector <16 x float> %el.b0.v0.m, <16 x float> %el.b1.v0.m, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %x0.u2 = shufflevector <16 x float> %el.b2.v0.m, <16 x float> %el.b3.v0.m, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %x0.u3 = shufflevector <16 x float> %el.b2.v0.m, <16 x float> %el.b3.v0.m, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %x0.run0 = shufflevector <16 x float> %x0.u0, <16 x float> %x0.u2, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30> ; run positions 0-3 of 16 lanes
  %x0.run1 = shufflevector <16 x float> %x0.u0, <16 x float> %x0.u2, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %x0.run2 = shufflevector <16 x float> %x0.u1, <16 x float> %x0.u3, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30>
  %x0.run3 = shufflevector <16 x float> %x0.u1, <16 x float> %x0.u3, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %lanes0.p = getelementptr inbounds float, ptr %lanes0, i64 %lanes.at
  %acc0 = load <16 x float>, ptr %lanes0.p, align 4
  %acc0.xnan = fcmp uno <16 x float> %acc0, %acc0
  %acc0.ynan = fcmp uno <16 x float> %x0.run0, %x0.run0
  %acc0.eq = fcmp oeq <16 x float> %acc0, %x0.run0
  %acc0.xbits = bitcast <16 x float> %acc0 to <16 x i32>
  %acc0.xneg = icmp slt <16 x i32> %acc0.xbits, zeroinitializer
  %acc0.ylt = fcmp olt <16 x float> %acc0, %x0.run0
  %acc0.pick = select <16 x i1> %acc0.ylt, <16 x float> %x0.run0, <16 x float> %acc0
  %acc0.signed = select <16 x i1> %acc0.xneg, <16 x float> %x0.run0, <16 x float> %acc0
  %acc0.ties = select <16 x i1> %acc0.eq, <16 x float> %acc0.signed, <16 x float> %acc0.pick
  %acc0.ynanp = select <16 x i1> %acc0.ynan, <16 x float> %x0.run0, <16 x float> %acc0.ties
  %acc0.1 = select <16 x i1> %acc0.xnan, <16 x float> %acc0, <16 x float> %acc0.ynanp
  %acc0.xnan.1 = fcmp uno <16 x float> %acc0.1, %acc0.1
  %acc0.ynan.1 = fcmp uno <16 x float> %x0.run1, %x0.run1
  %acc0.eq.1 = fcmp oeq <16 x float> %acc0.1, %x0.run1
  %acc0.xbits.1 = bitcast <16 x float> %acc0.1 to <16 x i32>
  %acc0.xneg.1 = icmp slt <16 x i32> %acc0.xbits.1, zeroinitializer
  %acc0.ylt.1 = fcmp olt <16 x float> %acc0.1, %x0.run1
  %acc0.pick.1 = select <16 x i1> %acc0.ylt.1, <16 x float> %x0.run1, <16 x float> %acc0.1
  %acc0.signed.1 = select <16 x i1> %acc0.xneg.1, <16 x float> %x0.run1, <16 x float> %acc0.1
  %acc0.ties.1 = select <16 x i1> %acc0.eq.1, <16 x float> %acc0.signed.1, <16 x float> %acc0.pick.1
  %acc0.ynanp.1 = select <16 x i1> %acc0.ynan.1, <16 x float> %x0.run1, <16 x float> %acc0.ties.1
  %acc0.2 = select <16 x i1> %acc0.xnan.1, <16 x float> %acc0.1, <16 x float> %acc0.ynanp.1
  %acc0.xnan.2 = fcmp uno <16 x float> %acc0.2, %acc0.2
  %acc0.ynan.2 = fcmp uno <16 x float> %x0.run2, %x0.run2
  %acc0.eq.2 = fcmp oeq <16 x float> %acc0.2, %x0.run2
  %acc0.xbits.2 = bitcast <16 x float> %acc0.2 to <16 x i32>
  %acc0.xneg.2 = icmp slt <16 x i32> %acc0.xbits.2, zeroinitializer
  %acc0.ylt.2 = fcmp olt <16 x float> %acc0.2, %x0.run2
  %acc0.pick.2 = select <16 x i1> %acc0.ylt.2, <16 x float> %x0.run2, <16 x float> %acc0.2
  %acc0.signed.2 = select <16 x i1> %acc0.xneg.2, <16 x float> %x0.run2, <16 x float> %acc0.2
  %acc0.ties.2 = select <16 x i1> %acc0.eq.2, <16 x float> %acc0.signed.2, <16 x float> %acc0.pick.2
  %acc0.ynanp.2 = select <16 x i1> %acc0.ynan.2, <16 x float> %x0.run2, <16 x float> %acc0.ties.2
  %acc0.3 = select <16 x i1> %acc0.xnan.2, <16 x float> %acc0.2, <16 x float> %acc0.ynanp.2
  %acc0.xnan.3 = fcmp uno <16 x float> %acc0.3, %acc0.3
  %acc0.ynan.3 = fcmp uno <16 x float> %x0.run3, %x0.run3
  %acc0.eq.3 = fcmp oeq <16 x float> %acc0.3, %x0.run3
  %acc0.xbits.3 = bitcast <16 x float> %acc0.3 to <16 x i32>
  %acc0.xneg.3 = icmp slt <16 x i32> %acc0.xbits.3, zeroinitializer
  %acc0.ylt.3 = fcmp olt <16 x float> %acc0.3, %x0.run3
  %acc0.pick.3 = select <16 x i1> %acc0.ylt.3, <16 x float> %x0.run3, <16 x float> %acc0.3
  %acc0.signed.3 = select <16 x i1> %acc0.xneg.3, <16 x float> %x0.run3, <16 x float> %acc0.3
  %acc0.ties.3 = select <16 x i1> %acc0.eq.3, <16 x float> %acc0.signed.3, <16 x float> %acc0.pick.3
  %acc0.ynanp.3 = select <16 x i1> %acc0.ynan.3, <16 x float> %x0.run3, <16 x float> %acc0.ties.3
  %acc0.4 = select <16 x i1> %acc0.xnan.3, <16 x float> %acc0.3, <16 x float> %acc0.ynanp.3
  store <16 x float> %acc0.4, ptr %lanes0.p, align 4
  store i64 %block.w64.next, ptr %i.slot
  br label %block.w64.cond
block.w64.done:
  br label %block.tail.cond
block.tail.cond:
  %block.tail = load i64, ptr %i.slot
  %block.tail.next = add i64 %block.tail, 1
  %block.tail.more = icmp ule i64 %block.tail.next, %n                       ; an element left
  br i1 %block.tail.more, label %block.tail.body, label %block.tail.done
block.tail.body:
  %tr = add i64 %first, %block.tail                                          ; reduced index
  %t.flat = add i64 %rowbase, %tr
  %el.t.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %t.flat
  %el.t.v0.m = load float, ptr %el.t.v0.p, align 4                           ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %tl4 = lshr i64 %block.tail, 2
  %tlane = and i64 %tl4, 255                                                 ; lane (i / 4) mod 256
  %tl0.p = getelementptr inbounds float, ptr %lanes0, i64 %tlane
  %tacc0 = load float, ptr %tl0.p, align 4
  %tacc0.xnan = fcmp uno float %tacc0, %tacc0
  %tacc0.ynan = fcmp uno float %el.t.v0.m, %el.t.v0.m
  %tacc0.eq = fcmp oeq float %tacc0, %el.t.v0.m
  %tacc0.xbits = bitcast float %tacc0 to i32
  %tacc0.xneg = icmp slt i32 %tacc0.xbits, zeroinitializer
  %tacc0.ylt = fcmp olt float %tacc0, %el.t.v0.m
  %tacc0.pick = select i1 %tacc0.ylt, float %el.t.v0.m, float %tacc0
  %tacc0.signed = select i1 %tacc0.xneg, float %el.t.v0.m, float %tacc0
  %tacc0.ties = select i1 %tacc0.eq, float %tacc0.signed, float %tacc0.pick
  %tacc0.ynanp = select i1 %tacc0.ynan, float %el.t.v0.m, float %tacc0.ties
  %tacc0.1 = select i1 %tacc0.xnan, float %tacc0, float %tacc0.ynanp
  store float %tacc0.1, ptr %tl0.p, align 4
  store i64 %block.tail.next, ptr %i.slot
  br label %block.tail.cond
block.tail.done:
  store i64 %active, ptr %active.slot
  store i64 128, ptr %s.slot
  br label %s.cond
s.cond:
  %s = load i64, ptr %s.slot
  %bf.more = icmp ne i64 %s, 0
  br i1 %bf.more, label %s.body, label %s.done
s.body:
  %act = load i64, ptr %active.slot
  %bf.d = sub i64 %act, %s
  %bf.c = call i64 @llvm.smin.i64(i64 %bf.d, i64 %s)
  %bf.n = call i64 @llvm.smax.i64(i64 %bf.c, i64 0)                          ; lanes l < min(s, active - s)
  %bf.wide = icmp uge i64 %s, 16                                             ; s >= W: whole vectors
  %bf.wn = select i1 %bf.wide, i64 %bf.n, i64 0                              ; the lanes in whole vectors
  store i64 0, ptr %bf.l.slot
  br label %bf.w16.cond
bf.w16.cond:
  %bf.w16 = load i64, ptr %bf.l.slot
  %bf.w16.next = add i64 %bf.w16, 16
  %bf.w16.more = icmp ule i64 %bf.w16.next, %bf.wn                           ; a whole step of 16 left
  br i1 %bf.w16.more, label %bf.w16.body, label %bf.w16.done
bf.w16.body:
  %bf.ls = add i64 %bf.w16, %s
  %bf.a0 = getelementptr inbounds float, ptr %lanes0, i64 %bf.w16
  %bf.b0 = getelementptr inbounds float, ptr %lanes0, i64 %bf.ls
  %bf.x0 = load <16 x float>, ptr %bf.a0, align 4
  %bf.y0 = load <16 x float>, ptr %bf.b0, align 4
  %bf.c0.xnan = fcmp uno <16 x float> %bf.x0, %bf.x0
  %bf.c0.ynan = fcmp uno <16 x float> %bf.y0, %bf.y0
  %bf.c0.eq = fcmp oeq <16 x float> %bf.x0, %bf.y0
  %bf.c0.xbits = bitcast <16 x float> %bf.x0 to <16 x i32>
  %bf.c0.xneg = icmp slt <16 x i32> %bf.c0.xbits, zeroinitializer
  %bf.c0.ylt = fcmp olt <16 x float> %bf.x0, %bf.y0
  %bf.c0.pick = select <16 x i1> %bf.c0.ylt, <16 x float> %bf.y0, <16 x float> %bf.x0
  %bf.c0.signed = select <16 x i1> %bf.c0.xneg, <16 x float> %bf.y0, <16 x float> %bf.x0
  %bf.c0.ties = select <16 x i1> %bf.c0.eq, <16 x float> %bf.c0.signed, <16 x float> %bf.c0.pick
  %bf.c0.ynanp = select <16 x i1> %bf.c0.ynan, <16 x float> %bf.y0, <16 x float> %bf.c0.ties
  %bf.c0 = select <16 x i1> %bf.c0.xnan, <16 x float> %bf.x0, <16 x float> %bf.c0.ynanp
  store <16 x float> %bf.c0, ptr %bf.a0, align 4
  store i64 %bf.w16.next, ptr %bf.l.slot
  br label %bf.w16.cond
bf.w16.done:
  br label %bf.tail.cond
bf.tail.cond:
  %bf.tail = load i64, ptr %bf.l.slot
  %bf.tail.next = add i64 %bf.tail, 1
  %bf.tail.more = icmp ule i64 %bf.tail.next, %bf.n                          ; an element left
  br i1 %bf.tail.more, label %bf.tail.body, label %bf.tail.done
bf.tail.body:
  %bf.ls.1 = add i64 %bf.tail, %s
  %bf.a0.1 = getelementptr inbounds float, ptr %lanes0, i64 %bf.tail
  %bf.b0.1 = getelementptr inbounds float, ptr %lanes0, i64 %bf.ls.1
  %bf.x0.1 = load float, ptr %bf.a0.1, align 4
  %bf.y0.1 = load float, ptr %bf.b0.1, align 4
  %bf.c0.xnan.1 = fcmp uno float %bf.x0.1, %bf.x0.1
  %bf.c0.ynan.1 = fcmp uno float %bf.y0.1, %bf.y0.1
  %bf.c0.eq.1 = fcmp oeq float %bf.x0.1, %bf.y0.1
  %bf.c0.xbits.1 = bitcast float %bf.x0.1 to i32
  %bf.c0.xneg.1 = icmp slt i32 %bf.c0.xbits.1, zeroinitializer
  %bf.c0.ylt.1 = fcmp olt float %bf.x0.1, %bf.y0.1
  %bf.c0.pick.1 = select i1 %bf.c0.ylt.1, float %bf.y0.1, float %bf.x0.1
  %bf.c0.signed.1 = select i1 %bf.c0.xneg.1, float %bf.y0.1, float %bf.x0.1
  %bf.c0.ties.1 = select i1 %bf.c0.eq.1, float %bf.c0.signed.1, float %bf.c0.pick.1
  %bf.c0.ynanp.1 = select i1 %bf.c0.ynan.1, float %bf.y0.1, float %bf.c0.ties.1
  %bf.c0.1 = select i1 %bf.c0.xnan.1, float %bf.x0.1, float %bf.c0.ynanp.1
  store float %bf.c0.1, ptr %bf.a0.1, align 4
  store i64 %bf.tail.next, ptr %bf.l.slot
  br label %bf.tail.cond
bf.tail.done:
  %act.next = call i64 @llvm.umin.i64(i64 %act, i64 %s)
  store i64 %act.next, ptr %active.slot
  %s.next = lshr i64 %s, 1
  store i64 %s.next, ptr %s.slot
  br label %s.cond
s.done:
  ; the chunk's partial is lane 0
  %partial0 = load float, ptr %lanes0, align 4
  %part0.p = getelementptr inbounds i8, ptr %part, i64 0
  store float %partial0, ptr %part0.p, align 4
  ret void
}

; row order, stage 1: the partial of chunk k of row o
;   reduction 1: sum float32 -> float32 (test_llvm_golden.cpp:121)
define internal void @cf1_softmax.chunk.s1(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr noalias %part) #0 {
entry:
  %lanes1 = alloca [256 x float], align 64
  %init.slot = alloca i64
  %i.slot = alloca i64
  %el.b0.v3.lib.in0 = alloca <16 x float>, align 64
  %el.b0.v3.lib.out = alloca <16 x float>, align 64
  %el.b1.v3.lib.in0 = alloca <16 x float>, align 64
  %el.b1.v3.lib.out = alloca <16 x float>, align 64
  %el.b2.v3.lib.in0 = alloca <16 x float>, align 64
  %el.b2.v3.lib.out = alloca <16 x float>, align 64
  %el.b3.v3.lib.in0 = alloca <16 x float>, align 64
  %el.b3.v3.lib.out = alloca <16 x float>, align 64
  %active.slot = alloca i64
  %s.slot = alloca i64
  %bf.l.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 64
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 72
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 80
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 112
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %part1.at = getelementptr inbounds i8, ptr %p, i64 120
  %part1 = load ptr, ptr %part1.at, align 8                                  ; split workspace of reduction 1
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 "x" float32, contiguous (test_llvm_golden.cpp:121)
  %el.in1.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.in1 = load ptr, ptr %el.in1.at, align 8                                ; input 1 "row value 0" float32, strided (test_llvm_golden.cpp:121)
  %el.in2.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.in2 = load ptr, ptr %el.in2.at, align 8                                ; input 2 "row value 1" float32, strided (test_llvm_golden.cpp:121)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 24
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.out1.at = getelementptr inbounds i8, ptr %p, i64 32
  %el.out1 = load ptr, ptr %el.out1.at, align 8                              ; output 1, contiguous
  %el.out2.at = getelementptr inbounds i8, ptr %p, i64 40
  %el.out2 = load ptr, ptr %el.out2.at, align 8                              ; output 2, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 48
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  %el.ext1.at = getelementptr inbounds i8, ptr %p, i64 52
  %el.ext1 = load i32, ptr %el.ext1.at, align 4                              ; extent of dimension 1
  %el.ext1.i64 = sext i32 %el.ext1 to i64
  %el.in1_s0.at = getelementptr inbounds i8, ptr %p, i64 56
  %el.in1_s0 = load i32, ptr %el.in1_s0.at, align 4                          ; in1 stride of dimension 0
  %el.in1_s0.i64 = sext i32 %el.in1_s0 to i64
  %el.in2_s0.at = getelementptr inbounds i8, ptr %p, i64 60
  %el.in2_s0 = load i32, ptr %el.in2_s0.at, align 4                          ; in2 stride of dimension 0
  %el.in2_s0.i64 = sext i32 %el.in2_s0 to i64
  ; chunk k of row o: elements [8192 k, min(L, 8192 (k + 1))); element i goes to lane (i / 4) mod 256
  %first = mul i64 %k, 8192
  %rest = sub i64 %len, %first
  %n = call i64 @llvm.umin.i64(i64 %rest, i64 8192)                          ; elements in this chunk
  %runs = add i64 %n, 3
  %runs4 = lshr i64 %runs, 2
  %active = call i64 @llvm.umin.i64(i64 %runs4, i64 256)                     ; lanes holding elements
  %rowbase = mul i64 %o, %len                                                ; flat index of (o, 0)
  ; every lane starts at the identity
  store i64 0, ptr %init.slot
  br label %init.cond
init.cond:
  %init = load i64, ptr %init.slot
  %init.more = icmp ult i64 %init, 256
  br i1 %init.more, label %init.body, label %init.done
init.body:
  %init.p = getelementptr inbounds float, ptr %lanes1, i64 %init
  store <16 x float> splat (float 0x8000000000000000), ptr %init.p, align 4
  %init.next = add i64 %init, 16
  store i64 %init.next, ptr %init.slot
  br label %init.cond
init.done:
  store i64 0, ptr %i.slot
  ; blocks of 64 elements: 16 lanes, each taking its run of 4 in order; the values are computed as 4 vectors of 16 consecutive elements and deinterleaved into runs
  br label %block.w64.cond
block.w64.cond:
  %block.w64 = load i64, ptr %i.slot
  %block.w64.next = add i64 %block.w64, 64
  %block.w64.more = icmp ule i64 %block.w64.next, %n                         ; a whole step of 64 left
  br i1 %block.w64.more, label %block.w64.body, label %block.w64.done
block.w64.body:
  %r = add i64 %first, %block.w64                                            ; reduced index
  %b0.flat = add i64 %rowbase, %r
  %el.b0.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b0.flat
  %el.b0.v0.m = load <16 x float>, ptr %el.b0.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0.one = load float, ptr %rv0.p, align 4                                 ; row value of reduction 0
  %rv0.ins = insertelement <16 x float> poison, float %rv0.one, i64 0
  %rv0 = shufflevector <16 x float> %rv0.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %el.b0.v2 = fsub <16 x float> %el.b0.v0.m, %rv0                            ; sub (test_llvm_golden.cpp:121)
  br label %el.b0.v3.inline
el.b0.v3.inline:
  %el.b0.v3.d = fpext <16 x float> %el.b0.v2 to <16 x double>                ; exp (test_llvm_golden.cpp:121): in double, rounded once to float32
  %el.b0.v3.kd = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.d, <16 x double> splat (double 0x40371547652B82FE), <16 x double> splat (double 0x4338000000000000)) ; K = nearest integer to 16 x / ln 2, in the low bits
  %el.b0.v3.k = fsub <16 x double> %el.b0.v3.kd, splat (double 0x4338000000000000)
  %el.b0.v3.r1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.k, <16 x double> splat (double 0xBFA62E42FEFA39EF), <16 x double> %el.b0.v3.d)
  %el.b0.v3.r = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.k, <16 x double> splat (double 0xBC3ABC9E3B39803F), <16 x double> %el.b0.v3.r1) ; r = x - K ln 2 / 16
  %el.b0.v3.p4 = call <16 x double> @llvm.fma.v16f64(<16 x double> splat (double 0x3F81111111111111), <16 x double> %el.b0.v3.r, <16 x double> splat (double 0x3FA5555555555555))
  %el.b0.v3.p3 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.p4, <16 x double> %el.b0.v3.r, <16 x double> splat (double 0x3FC5555555555555))
  %el.b0.v3.p2 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.p3, <16 x double> %el.b0.v3.r, <16 x double> splat (double 0x3FE0000000000000))
  %el.b0.v3.p1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.p2, <16 x double> %el.b0.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b0.v3.p0 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b0.v3.p1, <16 x double> %el.b0.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b0.v3.kb = bitcast <16 x double> %el.b0.v3.kd to <16 x i64>
  %el.b0.v3.j0 = shufflevector <16 x i64> %el.b0.v3.kb, <16 x i64> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %el.b0.v3.t0 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b0.v3.j0, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b0.v3.j1 = shufflevector <16 x i64> %el.b0.v3.kb, <16 x i64> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b0.v3.t1 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b0.v3.j1, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b0.v3.t = shufflevector <8 x double> %el.b0.v3.t0, <8 x double> %el.b0.v3.t1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b0.v3.e4 = lshr <16 x i64> %el.b0.v3.kb, splat (i64 4)
  %el.b0.v3.eb = add <16 x i64> %el.b0.v3.e4, splat (i64 1023)
  %el.b0.v3.sb = shl <16 x i64> %el.b0.v3.eb, splat (i64 52)                 ; the bits of 2^floor(K / 16)
  %el.b0.v3.s = bitcast <16 x i64> %el.b0.v3.sb to <16 x double>
  %el.b0.v3.ts = fmul <16 x double> %el.b0.v3.t, %el.b0.v3.s                 ; 2^(K / 16), exact
  %el.b0.v3.y = fmul <16 x double> %el.b0.v3.p0, %el.b0.v3.ts                ; exp(x) in double
  %el.b0.v3.f = fptrunc <16 x double> %el.b0.v3.y to <16 x float>
  %el.b0.v3.yb = bitcast <16 x double> %el.b0.v3.y to <16 x i64>
  %el.b0.v3.low = and <16 x i64> %el.b0.v3.yb, splat (i64 536870911)         ; the bits below float32's precision
  %el.b0.v3.off = sub <16 x i64> %el.b0.v3.low, splat (i64 268431360)
  %el.b0.v3.near = icmp ult <16 x i64> %el.b0.v3.off, splat (i64 8192)       ; within 4096 of halfway: the rounding is not certain
  %el.b0.v3.lo = fcmp oge <16 x float> %el.b0.v2, splat (float 0xC055C00000000000)
  %el.b0.v3.hi = fcmp ole <16 x float> %el.b0.v2, splat (float 0x4056000000000000)
  %el.b0.v3.in = and <16 x i1> %el.b0.v3.lo, %el.b0.v3.hi                    ; x in [-87, 88] (false for NaN)
  %el.b0.v3.out = xor <16 x i1> %el.b0.v3.in, splat (i1 true)
  %el.b0.v3.bad = or <16 x i1> %el.b0.v3.near, %el.b0.v3.out
  %el.b0.v3.any = call i1 @llvm.vector.reduce.or.v16i1(<16 x i1> %el.b0.v3.bad)
  br i1 %el.b0.v3.any, label %el.b0.v3.library, label %el.b0.v3.done
el.b0.v3.library:
  store <16 x float> %el.b0.v2, ptr %el.b0.v3.lib.in0, align 64
  call void @loom_exp_f32_v(ptr %el.b0.v3.lib.in0, ptr %el.b0.v3.lib.out, i64 16) ; the reference's function for these lanes
  %el.b0.v3.lib = load <16 x float>, ptr %el.b0.v3.lib.out, align 64
  br label %el.b0.v3.done
el.b0.v3.done:
  %el.b0.v3 = phi <16 x float> [ %el.b0.v3.f, %el.b0.v3.inline ], [ %el.b0.v3.lib, %el.b0.v3.library ] ; exp (test_llvm_golden.cpp:121)
  %el.out2.p = getelementptr inbounds float, ptr %el.out2, i64 %b0.flat
  store <16 x float> %el.b0.v3, ptr %el.out2.p, align 4                      ; out0 holds the operand of reduction 1 until the output pass
  %b1.r = add i64 %r, 16
  %b1.flat = add i64 %rowbase, %b1.r
  %el.b1.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b1.flat
  %el.b1.v0.m = load <16 x float>, ptr %el.b1.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %rv0.p.1 = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0.one.1 = load float, ptr %rv0.p.1, align 4                             ; row value of reduction 0
  %rv0.ins.1 = insertelement <16 x float> poison, float %rv0.one.1, i64 0
  %rv0.1 = shufflevector <16 x float> %rv0.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %el.b1.v2 = fsub <16 x float> %el.b1.v0.m, %rv0.1                          ; sub (test_llvm_golden.cpp:121)
  br label %el.b1.v3.inline
el.b1.v3.inline:
  %el.b1.v3.d = fpext <16 x float> %el.b1.v2 to <16 x double>                ; exp (test_llvm_golden.cpp:121): in double, rounded once to float32
  %el.b1.v3.kd = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.d, <16 x double> splat (double 0x40371547652B82FE), <16 x double> splat (double 0x4338000000000000)) ; K = nearest integer to 16 x / ln 2, in the low bits
  %el.b1.v3.k = fsub <16 x double> %el.b1.v3.kd, splat (double 0x4338000000000000)
  %el.b1.v3.r1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.k, <16 x double> splat (double 0xBFA62E42FEFA39EF), <16 x double> %el.b1.v3.d)
  %el.b1.v3.r = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.k, <16 x double> splat (double 0xBC3ABC9E3B39803F), <16 x double> %el.b1.v3.r1) ; r = x - K ln 2 / 16
  %el.b1.v3.p4 = call <16 x double> @llvm.fma.v16f64(<16 x double> splat (double 0x3F81111111111111), <16 x double> %el.b1.v3.r, <16 x double> splat (double 0x3FA5555555555555))
  %el.b1.v3.p3 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.p4, <16 x double> %el.b1.v3.r, <16 x double> splat (double 0x3FC5555555555555))
  %el.b1.v3.p2 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.p3, <16 x double> %el.b1.v3.r, <16 x double> splat (double 0x3FE0000000000000))
  %el.b1.v3.p1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.p2, <16 x double> %el.b1.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b1.v3.p0 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b1.v3.p1, <16 x double> %el.b1.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b1.v3.kb = bitcast <16 x double> %el.b1.v3.kd to <16 x i64>
  %el.b1.v3.j0 = shufflevector <16 x i64> %el.b1.v3.kb, <16 x i64> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %el.b1.v3.t0 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b1.v3.j0, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b1.v3.j1 = shufflevector <16 x i64> %el.b1.v3.kb, <16 x i64> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b1.v3.t1 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b1.v3.j1, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b1.v3.t = shufflevector <8 x double> %el.b1.v3.t0, <8 x double> %el.b1.v3.t1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b1.v3.e4 = lshr <16 x i64> %el.b1.v3.kb, splat (i64 4)
  %el.b1.v3.eb = add <16 x i64> %el.b1.v3.e4, splat (i64 1023)
  %el.b1.v3.sb = shl <16 x i64> %el.b1.v3.eb, splat (i64 52)                 ; the bits of 2^floor(K / 16)
  %el.b1.v3.s = bitcast <16 x i64> %el.b1.v3.sb to <16 x double>
  %el.b1.v3.ts = fmul <16 x double> %el.b1.v3.t, %el.b1.v3.s                 ; 2^(K / 16), exact
  %el.b1.v3.y = fmul <16 x double> %el.b1.v3.p0, %el.b1.v3.ts                ; exp(x) in double
  %el.b1.v3.f = fptrunc <16 x double> %el.b1.v3.y to <16 x float>
  %el.b1.v3.yb = bitcast <16 x double> %el.b1.v3.y to <16 x i64>
  %el.b1.v3.low = and <16 x i64> %el.b1.v3.yb, splat (i64 536870911)         ; the bits below float32's precision
  %el.b1.v3.off = sub <16 x i64> %el.b1.v3.low, splat (i64 268431360)
  %el.b1.v3.near = icmp ult <16 x i64> %el.b1.v3.off, splat (i64 8192)       ; within 4096 of halfway: the rounding is not certain
  %el.b1.v3.lo = fcmp oge <16 x float> %el.b1.v2, splat (float 0xC055C00000000000)
  %el.b1.v3.hi = fcmp ole <16 x float> %el.b1.v2, splat (float 0x4056000000000000)
  %el.b1.v3.in = and <16 x i1> %el.b1.v3.lo, %el.b1.v3.hi                    ; x in [-87, 88] (false for NaN)
  %el.b1.v3.out = xor <16 x i1> %el.b1.v3.in, splat (i1 true)
  %el.b1.v3.bad = or <16 x i1> %el.b1.v3.near, %el.b1.v3.out
  %el.b1.v3.any = call i1 @llvm.vector.reduce.or.v16i1(<16 x i1> %el.b1.v3.bad)
  br i1 %el.b1.v3.any, label %el.b1.v3.library, label %el.b1.v3.done
el.b1.v3.library:
  store <16 x float> %el.b1.v2, ptr %el.b1.v3.lib.in0, align 64
  call void @loom_exp_f32_v(ptr %el.b1.v3.lib.in0, ptr %el.b1.v3.lib.out, i64 16) ; the reference's function for these lanes
  %el.b1.v3.lib = load <16 x float>, ptr %el.b1.v3.lib.out, align 64
  br label %el.b1.v3.done
el.b1.v3.done:
  %el.b1.v3 = phi <16 x float> [ %el.b1.v3.f, %el.b1.v3.inline ], [ %el.b1.v3.lib, %el.b1.v3.library ] ; exp (test_llvm_golden.cpp:121)
  %el.out2.p.1 = getelementptr inbounds float, ptr %el.out2, i64 %b1.flat
  store <16 x float> %el.b1.v3, ptr %el.out2.p.1, align 4                    ; out0 holds the operand of reduction 1 until the output pass
  %b2.r = add i64 %r, 32
  %b2.flat = add i64 %rowbase, %b2.r
  %el.b2.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b2.flat
  %el.b2.v0.m = load <16 x float>, ptr %el.b2.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %rv0.p.2 = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0.one.2 = load float, ptr %rv0.p.2, align 4                             ; row value of reduction 0
  %rv0.ins.2 = insertelement <16 x float> poison, float %rv0.one.2, i64 0
  %rv0.2 = shufflevector <16 x float> %rv0.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %el.b2.v2 = fsub <16 x float> %el.b2.v0.m, %rv0.2                          ; sub (test_llvm_golden.cpp:121)
  br label %el.b2.v3.inline
el.b2.v3.inline:
  %el.b2.v3.d = fpext <16 x float> %el.b2.v2 to <16 x double>                ; exp (test_llvm_golden.cpp:121): in double, rounded once to float32
  %el.b2.v3.kd = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.d, <16 x double> splat (double 0x40371547652B82FE), <16 x double> splat (double 0x4338000000000000)) ; K = nearest integer to 16 x / ln 2, in the low bits
  %el.b2.v3.k = fsub <16 x double> %el.b2.v3.kd, splat (double 0x4338000000000000)
  %el.b2.v3.r1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.k, <16 x double> splat (double 0xBFA62E42FEFA39EF), <16 x double> %el.b2.v3.d)
  %el.b2.v3.r = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.k, <16 x double> splat (double 0xBC3ABC9E3B39803F), <16 x double> %el.b2.v3.r1) ; r = x - K ln 2 / 16
  %el.b2.v3.p4 = call <16 x double> @llvm.fma.v16f64(<16 x double> splat (double 0x3F81111111111111), <16 x double> %el.b2.v3.r, <16 x double> splat (double 0x3FA5555555555555))
  %el.b2.v3.p3 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.p4, <16 x double> %el.b2.v3.r, <16 x double> splat (double 0x3FC5555555555555))
  %el.b2.v3.p2 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.p3, <16 x double> %el.b2.v3.r, <16 x double> splat (double 0x3FE0000000000000))
  %el.b2.v3.p1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.p2, <16 x double> %el.b2.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b2.v3.p0 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b2.v3.p1, <16 x double> %el.b2.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b2.v3.kb = bitcast <16 x double> %el.b2.v3.kd to <16 x i64>
  %el.b2.v3.j0 = shufflevector <16 x i64> %el.b2.v3.kb, <16 x i64> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %el.b2.v3.t0 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b2.v3.j0, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b2.v3.j1 = shufflevector <16 x i64> %el.b2.v3.kb, <16 x i64> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b2.v3.t1 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b2.v3.j1, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b2.v3.t = shufflevector <8 x double> %el.b2.v3.t0, <8 x double> %el.b2.v3.t1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b2.v3.e4 = lshr <16 x i64> %el.b2.v3.kb, splat (i64 4)
  %el.b2.v3.eb = add <16 x i64> %el.b2.v3.e4, splat (i64 1023)
  %el.b2.v3.sb = shl <16 x i64> %el.b2.v3.eb, splat (i64 52)                 ; the bits of 2^floor(K / 16)
  %el.b2.v3.s = bitcast <16 x i64> %el.b2.v3.sb to <16 x double>
  %el.b2.v3.ts = fmul <16 x double> %el.b2.v3.t, %el.b2.v3.s                 ; 2^(K / 16), exact
  %el.b2.v3.y = fmul <16 x double> %el.b2.v3.p0, %el.b2.v3.ts                ; exp(x) in double
  %el.b2.v3.f = fptrunc <16 x double> %el.b2.v3.y to <16 x float>
  %el.b2.v3.yb = bitcast <16 x double> %el.b2.v3.y to <16 x i64>
  %el.b2.v3.low = and <16 x i64> %el.b2.v3.yb, splat (i64 536870911)         ; the bits below float32's precision
  %el.b2.v3.off = sub <16 x i64> %el.b2.v3.low, splat (i64 268431360)
  %el.b2.v3.near = icmp ult <16 x i64> %el.b2.v3.off, splat (i64 8192)       ; within 4096 of halfway: the rounding is not certain
  %el.b2.v3.lo = fcmp oge <16 x float> %el.b2.v2, splat (float 0xC055C00000000000)
  %el.b2.v3.hi = fcmp ole <16 x float> %el.b2.v2, splat (float 0x4056000000000000)
  %el.b2.v3.in = and <16 x i1> %el.b2.v3.lo, %el.b2.v3.hi                    ; x in [-87, 88] (false for NaN)
  %el.b2.v3.out = xor <16 x i1> %el.b2.v3.in, splat (i1 true)
  %el.b2.v3.bad = or <16 x i1> %el.b2.v3.near, %el.b2.v3.out
  %el.b2.v3.any = call i1 @llvm.vector.reduce.or.v16i1(<16 x i1> %el.b2.v3.bad)
  br i1 %el.b2.v3.any, label %el.b2.v3.library, label %el.b2.v3.done
el.b2.v3.library:
  store <16 x float> %el.b2.v2, ptr %el.b2.v3.lib.in0, align 64
  call void @loom_exp_f32_v(ptr %el.b2.v3.lib.in0, ptr %el.b2.v3.lib.out, i64 16) ; the reference's function for these lanes
  %el.b2.v3.lib = load <16 x float>, ptr %el.b2.v3.lib.out, align 64
  br label %el.b2.v3.done
el.b2.v3.done:
  %el.b2.v3 = phi <16 x float> [ %el.b2.v3.f, %el.b2.v3.inline ], [ %el.b2.v3.lib, %el.b2.v3.library ] ; exp (test_llvm_golden.cpp:121)
  %el.out2.p.2 = getelementptr inbounds float, ptr %el.out2, i64 %b2.flat
  store <16 x float> %el.b2.v3, ptr %el.out2.p.2, align 4                    ; out0 holds the operand of reduction 1 until the output pass
  %b3.r = add i64 %r, 48
  %b3.flat = add i64 %rowbase, %b3.r
  %el.b3.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b3.flat
  %el.b3.v0.m = load <16 x float>, ptr %el.b3.v0.p, align 4                  ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %rv0.p.3 = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0.one.3 = load float, ptr %rv0.p.3, align 4                             ; row value of reduction 0
  %rv0.ins.3 = insertelement <16 x float> poison, float %rv0.one.3, i64 0
  %rv0.3 = shufflevector <16 x float> %rv0.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %el.b3.v2 = fsub <16 x float> %el.b3.v0.m, %rv0.3                          ; sub (test_llvm_golden.cpp:121)
  br label %el.b3.v3.inline
el.b3.v3.inline:
  %el.b3.v3.d = fpext <16 x float> %el.b3.v2 to <16 x double>                ; exp (test_llvm_golden.cpp:121): in double, rounded once to float32
  %el.b3.v3.kd = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.d, <16 x double> splat (double 0x40371547652B82FE), <16 x double> splat (double 0x4338000000000000)) ; K = nearest integer to 16 x / ln 2, in the low bits
  %el.b3.v3.k = fsub <16 x double> %el.b3.v3.kd, splat (double 0x4338000000000000)
  %el.b3.v3.r1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.k, <16 x double> splat (double 0xBFA62E42FEFA39EF), <16 x double> %el.b3.v3.d)
  %el.b3.v3.r = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.k, <16 x double> splat (double 0xBC3ABC9E3B39803F), <16 x double> %el.b3.v3.r1) ; r = x - K ln 2 / 16
  %el.b3.v3.p4 = call <16 x double> @llvm.fma.v16f64(<16 x double> splat (double 0x3F81111111111111), <16 x double> %el.b3.v3.r, <16 x double> splat (double 0x3FA5555555555555))
  %el.b3.v3.p3 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.p4, <16 x double> %el.b3.v3.r, <16 x double> splat (double 0x3FC5555555555555))
  %el.b3.v3.p2 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.p3, <16 x double> %el.b3.v3.r, <16 x double> splat (double 0x3FE0000000000000))
  %el.b3.v3.p1 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.p2, <16 x double> %el.b3.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b3.v3.p0 = call <16 x double> @llvm.fma.v16f64(<16 x double> %el.b3.v3.p1, <16 x double> %el.b3.v3.r, <16 x double> splat (double 0x3FF0000000000000))
  %el.b3.v3.kb = bitcast <16 x double> %el.b3.v3.kd to <16 x i64>
  %el.b3.v3.j0 = shufflevector <16 x i64> %el.b3.v3.kb, <16 x i64> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %el.b3.v3.t0 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b3.v3.j0, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b3.v3.j1 = shufflevector <16 x i64> %el.b3.v3.kb, <16 x i64> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b3.v3.t1 = call <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double> <double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429>, <8 x i64> %el.b3.v3.j1, <8 x double> <double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA>)
  %el.b3.v3.t = shufflevector <8 x double> %el.b3.v3.t0, <8 x double> %el.b3.v3.t1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %el.b3.v3.e4 = lshr <16 x i64> %el.b3.v3.kb, splat (i64 4)
  %el.b3.v3.eb = add <16 x i64> %el.b3.v3.e4, splat (i64 1023)
  %el.b3.v3.sb = shl <16 x i64> %el.b3.v3.eb, splat (i64 52)                 ; the bits of 2^floor(K / 16)
  %el.b3.v3.s = bitcast <16 x i64> %el.b3.v3.sb to <16 x double>
  %el.b3.v3.ts = fmul <16 x double> %el.b3.v3.t, %el.b3.v3.s                 ; 2^(K / 16), exact
  %el.b3.v3.y = fmul <16 x double> %el.b3.v3.p0, %el.b3.v3.ts                ; exp(x) in double
  %el.b3.v3.f = fptrunc <16 x double> %el.b3.v3.y to <16 x float>
  %el.b3.v3.yb = bitcast <16 x double> %el.b3.v3.y to <16 x i64>
  %el.b3.v3.low = and <16 x i64> %el.b3.v3.yb, splat (i64 536870911)         ; the bits below float32's precision
  %el.b3.v3.off = sub <16 x i64> %el.b3.v3.low, splat (i64 268431360)
  %el.b3.v3.near = icmp ult <16 x i64> %el.b3.v3.off, splat (i64 8192)       ; within 4096 of halfway: the rounding is not certain
  %el.b3.v3.lo = fcmp oge <16 x float> %el.b3.v2, splat (float 0xC055C00000000000)
  %el.b3.v3.hi = fcmp ole <16 x float> %el.b3.v2, splat (float 0x4056000000000000)
  %el.b3.v3.in = and <16 x i1> %el.b3.v3.lo, %el.b3.v3.hi                    ; x in [-87, 88] (false for NaN)
  %el.b3.v3.out = xor <16 x i1> %el.b3.v3.in, splat (i1 true)
  %el.b3.v3.bad = or <16 x i1> %el.b3.v3.near, %el.b3.v3.out
  %el.b3.v3.any = call i1 @llvm.vector.reduce.or.v16i1(<16 x i1> %el.b3.v3.bad)
  br i1 %el.b3.v3.any, label %el.b3.v3.library, label %el.b3.v3.done
el.b3.v3.library:
  store <16 x float> %el.b3.v2, ptr %el.b3.v3.lib.in0, align 64
  call void @loom_exp_f32_v(ptr %el.b3.v3.lib.in0, ptr %el.b3.v3.lib.out, i64 16) ; the reference's function for these lanes
  %el.b3.v3.lib = load <16 x float>, ptr %el.b3.v3.lib.out, align 64
  br label %el.b3.v3.done
el.b3.v3.done:
  %el.b3.v3 = phi <16 x float> [ %el.b3.v3.f, %el.b3.v3.inline ], [ %el.b3.v3.lib, %el.b3.v3.library ] ; exp (test_llvm_golden.cpp:121)
  %el.out2.p.3 = getelementptr inbounds float, ptr %el.out2, i64 %b3.flat
  store <16 x float> %el.b3.v3, ptr %el.out2.p.3, align 4                    ; out0 holds the operand of reduction 1 until the output pass
  %l4 = lshr i64 %block.w64, 2
  %lanes.at = and i64 %l4, 255                                               ; first lane of the block: (i / 4) mod 256
  ; reduction 1: sum float32 -> float32 (test_llvm_golden.cpp:121)
  %x1.u0 = shufflevector <16 x float> %el.b0.v3, <16 x float> %el.b1.v3, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %x1.u1 = shufflevector <16 x float> %el.b0.v3, <16 x float> %el.b1.v3, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %x1.u2 = shufflevector <16 x float> %el.b2.v3, <16 x float> %el.b3.v3, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %x1.u3 = shufflevector <16 x float> %el.b2.v3, <16 x float> %el.b3.v3, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %x1.run0 = shufflevector <16 x float> %x1.u0, <16 x float> %x1.u2, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30> ; run positions 0-3 of 16 lanes
  %x1.run1 = shufflevector <16 x float> %x1.u0, <16 x float> %x1.u2, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %x1.run2 = shufflevector <16 x float> %x1.u1, <16 x float> %x1.u3, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30>
  %x1.run3 = shufflevector <16 x float> %x1.u1, <16 x float> %x1.u3, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %lanes1.p = getelementptr inbounds float, ptr %lanes1, i64 %lanes.at
  %acc1 = load <16 x float>, ptr %lanes1.p, align 4
  %acc1.1 = fadd <16 x float> %acc1, %x1.run0
  %acc1.2 = fadd <16 x float> %acc1.1, %x1.run1
  %acc1.3 = fadd <16 x float> %acc1.2, %x1.run2
  %acc1.4 = fadd <16 x float> %acc1.3, %x1.run3
  store <16 x float> %acc1.4, ptr %lanes1.p, align 4
  store i64 %block.w64.next, ptr %i.slot
  br label %block.w64.cond
block.w64.done:
  br label %block.tail.cond
block.tail.cond:
  %block.tail = load i64, ptr %i.slot
  %block.tail.next = add i64 %block.tail, 1
  %block.tail.more = icmp ule i64 %block.tail.next, %n                       ; an element left
  br i1 %block.tail.more, label %block.tail.body, label %block.tail.done
block.tail.body:
  %tr = add i64 %first, %block.tail                                          ; reduced index
  %t.flat = add i64 %rowbase, %tr
  %el.t.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %t.flat
  %el.t.v0.m = load float, ptr %el.t.v0.p, align 4                           ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:121)
  %rv0.p.4 = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0.4 = load float, ptr %rv0.p.4, align 4                                 ; row value of reduction 0
  %el.t.v2 = fsub float %el.t.v0.m, %rv0.4                                   ; sub (test_llvm_golden.cpp:121)
  br label %el.t.v3.inline
el.t.v3.inline:
  %el.t.v3.d = fpext float %el.t.v2 to double                                ; exp (test_llvm_golden.cpp:121): in double, rounded once to float32
  %el.t.v3.kd = call double @llvm.fma.f64(double %el.t.v3.d, double 0x40371547652B82FE, double 0x4338000000000000) ; K = nearest integer to 16 x / ln 2, in the low bits
  %el.t.v3.k = fsub double %el.t.v3.kd, 0x4338000000000000
  %el.t.v3.r1 = call double @llvm.fma.f64(double %el.t.v3.k, double 0xBFA62E42FEFA39EF, double %el.t.v3.d)
  %el.t.v3.r = call double @llvm.fma.f64(double %el.t.v3.k, double 0xBC3ABC9E3B39803F, double %el.t.v3.r1) ; r = x - K ln 2 / 16
  %el.t.v3.p4 = call double @llvm.fma.f64(double 0x3F81111111111111, double %el.t.v3.r, double 0x3FA5555555555555)
  %el.t.v3.p3 = call double @llvm.fma.f64(double %el.t.v3.p4, double %el.t.v3.r, double 0x3FC5555555555555)
  %el.t.v3.p2 = call double @llvm.fma.f64(double %el.t.v3.p3, double %el.t.v3.r, double 0x3FE0000000000000)
  %el.t.v3.p1 = call double @llvm.fma.f64(double %el.t.v3.p2, double %el.t.v3.r, double 0x3FF0000000000000)
  %el.t.v3.p0 = call double @llvm.fma.f64(double %el.t.v3.p1, double %el.t.v3.r, double 0x3FF0000000000000)
  %el.t.v3.kb = bitcast double %el.t.v3.kd to i64
  %el.t.v3.j = and i64 %el.t.v3.kb, 15
  %el.t.v3.tp = getelementptr inbounds double, ptr @loom.exp2.sixteenths, i64 %el.t.v3.j
  %el.t.v3.t = load double, ptr %el.t.v3.tp, align 8
  %el.t.v3.e4 = lshr i64 %el.t.v3.kb, 4
  %el.t.v3.eb = add i64 %el.t.v3.e4, 1023
  %el.t.v3.sb = shl i64 %el.t.v3.eb, 52                                      ; the bits of 2^floor(K / 16)
  %el.t.v3.s = bitcast i64 %el.t.v3.sb to double
  %el.t.v3.ts = fmul double %el.t.v3.t, %el.t.v3.s                           ; 2^(K / 16), exact
  %el.t.v3.y = fmul double %el.t.v3.p0, %el.t.v3.ts                          ; exp(x) in double
  %el.t.v3.f = fptrunc double %el.t.v3.y to float
  %el.t.v3.yb = bitcast double %el.t.v3.y to i64
  %el.t.v3.low = and i64 %el.t.v3.yb, 536870911                              ; the bits below float32's precision
  %el.t.v3.off = sub i64 %el.t.v3.low, 268431360
  %el.t.v3.near = icmp ult i64 %el.t.v3.off, 8192                            ; within 4096 of halfway: the rounding is not certain
  %el.t.v3.lo = fcmp oge float %el.t.v2, 0xC055C00000000000
  %el.t.v3.hi = fcmp ole float %el.t.v2, 0x4056000000000000
  %el.t.v3.in = and i1 %el.t.v3.lo, %el.t.v3.hi                              ; x in [-87, 88] (false for NaN)
  %el.t.v3.out = xor i1 %el.t.v3.in, true
  %el.t.v3.bad = or i1 %el.t.v3.near, %el.t.v3.out
  br i1 %el.t.v3.bad, label %el.t.v3.library, label %el.t.v3.done
el.t.v3.library:
  %el.t.v3.lib = call float @loom_exp_f32(float %el.t.v2)                    ; the reference's function for these lanes
  br label %el.t.v3.done
el.t.v3.done:
  %el.t.v3 = phi float [ %el.t.v3.f, %el.t.v3.inline ], [ %el.t.v3.lib, %el.t.v3.library ] ; exp (test_llvm_golden.cpp:121)
  %el.out2.p.4 = getelementptr inbounds float, ptr %el.out2, i64 %t.flat
  store float %el.t.v3, ptr %el.out2.p.4, align 4                            ; out0 holds the operand of reduction 1 until the output pass
  %tl4 = lshr i64 %block.tail, 2
  %tlane = and i64 %tl4, 255                                                 ; lane (i / 4) mod 256
  %tl1.p = getelementptr inbounds float, ptr %lanes1, i64 %tlane
  %tacc1 = load float, ptr %tl1.p, align 4
  %tacc1.1 = fadd float %tacc1, %el.t.v3
  store float %tacc1.1, ptr %tl1.p, align 4
  store i64 %block.tail.next, ptr %i.slot
  br label %block.tail.cond
block.tail.done:
  store i64 %active, ptr %active.slot
  store i64 128, ptr %s.slot
  br label %s.cond
s.cond:
  %s = load i64, ptr %s.slot
  %bf.more = icmp ne i64 %s, 0
  br i1 %bf.more, label %s.body, label %s.done
s.body:
  %act = load i64, ptr %active.slot
  %bf.d = sub i64 %act, %s
  %bf.c = call i64 @llvm.smin.i64(i64 %bf.d, i64 %s)
  %bf.n = call i64 @llvm.smax.i64(i64 %bf.c, i64 0)                          ; lanes l < min(s, active - s)
  %bf.wide = icmp uge i64 %s, 16                                             ; s >= W: whole vectors
  %bf.wn = select i1 %bf.wide, i64 %bf.n, i64 0                              ; the lanes in whole vectors
  store i64 0, ptr %bf.l.slot
  br label %bf.w16.cond
bf.w16.cond:
  %bf.w16 = load i64, ptr %bf.l.slot
  %bf.w16.next = add i64 %bf.w16, 16
  %bf.w16.more = icmp ule i64 %bf.w16.next, %bf.wn                           ; a whole step of 16 left
  br i1 %bf.w16.more, label %bf.w16.body, label %bf.w16.done
bf.w16.body:
  %bf.ls = add i64 %bf.w16, %s
  %bf.a1 = getelementptr inbounds float, ptr %lanes1, i64 %bf.w16
  %bf.b1 = getelementptr inbounds float, ptr %lanes1, i64 %bf.ls
  %bf.x1 = load <16 x float>, ptr %bf.a1, align 4
  %bf.y1 = load <16 x float>, ptr %bf.b1, align 4
  %bf.c1 = fadd <16 x float> %bf.x1, %bf.y1
  store <16 x float> %bf.c1, ptr %bf.a1, align 4
  store i64 %bf.w16.next, ptr %bf.l.slot
  br label %bf.w16.cond
bf.w16.done:
  br label %bf.tail.cond
bf.tail.cond:
  %bf.tail = load i64, ptr %bf.l.slot
  %bf.tail.next = add i64 %bf.tail, 1
  %bf.tail.more = icmp ule i64 %bf.tail.next, %bf.n                          ; an element left
  br i1 %bf.tail.more, label %bf.tail.body, label %bf.tail.done
bf.tail.body:
  %bf.ls.1 = add i64 %bf.tail, %s
  %bf.a1.1 = getelementptr inbounds float, ptr %lanes1, i64 %bf.tail
  %bf.b1.1 = getelementptr inbounds float, ptr %lanes1, i64 %bf.ls.1
  %bf.x1.1 = load float, ptr %bf.a1.1, align 4
  %bf.y1.1 = load float, ptr %bf.b1.1, align 4
  %bf.c1.1 = fadd float %bf.x1.1, %bf.y1.1
  store float %bf.c1.1, ptr %bf.a1.1, align 4
  store i64 %bf.tail.next, ptr %bf.l.slot
  br label %bf.tail.cond
bf.tail.done:
  %act.next = call i64 @llvm.umin.i64(i64 %act, i64 %s)
  store i64 %act.next, ptr %active.slot
  %s.next = lshr i64 %s, 1
  store i64 %s.next, ptr %s.slot
  br label %s.cond
s.done:
  ; the chunk's partial is lane 0
  %partial1 = load float, ptr %lanes1, align 4
  %part1.p = getelementptr inbounds i8, ptr %part, i64 512
  store float %partial1, ptr %part1.p, align 4
  ret void
}

; rows [begin, end): every stage, the element outputs and the row outputs
define void @cf1_softmax_rows(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %rv = alloca [512 x i8], align 64
  %part = alloca [1024 x i8], align 64
  %o.slot = alloca i64
  %s0.stack0 = alloca [64 x float], align 64
  %s0.depth = alloca i64
  %s0.k.slot = alloca i64
  %s0.count.slot = alloca i64
  %s1.stack1 = alloca [64 x float], align 64
  %s1.depth = alloca i64
  %s1.k.slot = alloca i64
  %s1.count.slot = alloca i64
  %eo.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 64
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 72
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 80
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 112
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %part1.at = getelementptr inbounds i8, ptr %p, i64 120
  %part1 = load ptr, ptr %part1.at, align 8                                  ; split workspace of reduction 1
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 "x" float32, contiguous (test_llvm_golden.cpp:121)
  %el.in1.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.in1 = load ptr, ptr %el.in1.at, align 8                                ; input 1 "row value 0" float32, strided (test_llvm_golden.cpp:121)
  %el.in2.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.in2 = load ptr, ptr %el.in2.at, align 8                                ; input 2 "row value 1" float32, strided (test_llvm_golden.cpp:121)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 24
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.out1.at = getelementptr inbounds i8, ptr %p, i64 32
  %el.out1 = load ptr, ptr %el.out1.at, align 8                              ; output 1, contiguous
  %el.out2.at = getelementptr inbounds i8, ptr %p, i64 40
  %el.out2 = load ptr, ptr %el.out2.at, align 8                              ; output 2, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 48
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  %el.ext1.at = getelementptr inbounds i8, ptr %p, i64 52
  %el.ext1 = load i32, ptr %el.ext1.at, align 4                              ; extent of dimension 1
  %el.ext1.i64 = sext i32 %el.ext1 to i64
  %el.in1_s0.at = getelementptr inbounds i8, ptr %p, i64 56
  %el.in1_s0 = load i32, ptr %el.in1_s0.at, align 4                          ; in1 stride of dimension 0
  %el.in1_s0.i64 = sext i32 %el.in1_s0 to i64
  %el.in2_s0.at = getelementptr inbounds i8, ptr %p, i64 60
  %el.in2_s0 = load i32, ptr %el.in2_s0.at, align 4                          ; in2 stride of dimension 0
  %el.in2_s0.i64 = sext i32 %el.in2_s0 to i64
  store i64 %begin, ptr %o.slot
  br label %o.cond
o.cond:
  %o = load i64, ptr %o.slot
  %o.more = icmp ult i64 %o, %end
  br i1 %o.more, label %o.body, label %o.done
o.body:
  ; stage 0: every chunk of row o, combined by the pairwise tree
  store float 0xFFF0000000000000, ptr %s0.stack0, align 4
  store i64 0, ptr %s0.depth
  store i64 0, ptr %s0.k.slot
  br label %s0.tree.head
s0.tree.head:
  %s0.k = load i64, ptr %s0.k.slot
  %s0.more = icmp ult i64 %s0.k, %chunks                                     ; a chunk left (else: the final fold)
  br i1 %s0.more, label %s0.tree.push, label %s0.merge.cond
s0.tree.push:
  call void @cf1_softmax.chunk.s0(ptr %p, i64 %o, i64 %s0.k, ptr %rv, ptr %part)
  %part0.p = getelementptr inbounds i8, ptr %part, i64 0
  %p0 = load float, ptr %part0.p, align 4
  %s0.d = load i64, ptr %s0.depth
  %s0.s0 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.d
  store float %p0, ptr %s0.s0, align 4
  %s0.d.push = add i64 %s0.d, 1                                              ; push chunk k's partial
  store i64 %s0.d.push, ptr %s0.depth
  %s0.pushed = add i64 %s0.k, 1
  store i64 %s0.pushed, ptr %s0.count.slot
  br label %s0.merge.cond
s0.merge.cond:
  %s0.c = load i64, ptr %s0.count.slot
  %s0.odd = and i64 %s0.c, 1
  %s0.even = icmp eq i64 %s0.odd, 0
  %s0.fd = load i64, ptr %s0.depth
  %s0.two = icmp ugt i64 %s0.fd, 1
  %s0.merge = select i1 %s0.more, i1 %s0.even, i1 %s0.two
  br i1 %s0.merge, label %s0.merge.body, label %s0.tree.next
s0.merge.body:
  %s0.md1 = sub i64 %s0.fd, 1
  %s0.md2 = sub i64 %s0.fd, 2
  %s0.s0.1 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.md2
  %s0.s0.2 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.md1
  %s0.tx0 = load float, ptr %s0.s0.1, align 4
  %s0.ty0 = load float, ptr %s0.s0.2, align 4
  %s0.tc0.xnan = fcmp uno float %s0.tx0, %s0.tx0
  %s0.tc0.ynan = fcmp uno float %s0.ty0, %s0.ty0
  %s0.tc0.eq = fcmp oeq float %s0.tx0, %s0.ty0
  %s0.tc0.xbits = bitcast float %s0.tx0 to i32
  %s0.tc0.xneg = icmp slt i32 %s0.tc0.xbits, zeroinitializer
  %s0.tc0.ylt = fcmp olt float %s0.tx0, %s0.ty0
  %s0.tc0.pick = select i1 %s0.tc0.ylt, float %s0.ty0, float %s0.tx0
  %s0.tc0.signed = select i1 %s0.tc0.xneg, float %s0.ty0, float %s0.tx0
  %s0.tc0.ties = select i1 %s0.tc0.eq, float %s0.tc0.signed, float %s0.tc0.pick
  %s0.tc0.ynanp = select i1 %s0.tc0.ynan, float %s0.ty0, float %s0.tc0.ties
  %s0.tc0 = select i1 %s0.tc0.xnan, float %s0.tx0, float %s0.tc0.ynanp
  store float %s0.tc0, ptr %s0.s0.1, align 4
  store i64 %s0.md1, ptr %s0.depth
  %s0.c.half = lshr i64 %s0.c, 1
  store i64 %s0.c.half, ptr %s0.count.slot
  br label %s0.merge.cond
s0.tree.next:
  br i1 %s0.more, label %s0.tree.inc, label %s0.tree.done
s0.tree.inc:
  %s0.k.next = add i64 %s0.k, 1
  store i64 %s0.k.next, ptr %s0.k.slot
  br label %s0.tree.head
s0.tree.done:
  %s0.total0 = load float, ptr %s0.stack0, align 4
  %s0.rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  store float %s0.total0, ptr %s0.rv0.p, align 4                             ; row value of reduction 0: max float32 -> float32 (test_llvm_golden.cpp:121)
  ; stage 1: every chunk of row o, combined by the pairwise tree
  store float 0x8000000000000000, ptr %s1.stack1, align 4
  store i64 0, ptr %s1.depth
  store i64 0, ptr %s1.k.slot
  br label %s1.tree.head
s1.tree.head:
  %s1.k = load i64, ptr %s1.k.slot
  %s1.more = icmp ult i64 %s1.k, %chunks                                     ; a chunk left (else: the final fold)
  br i1 %s1.more, label %s1.tree.push, label %s1.merge.cond
s1.tree.push:
  call void @cf1_softmax.chunk.s1(ptr %p, i64 %o, i64 %s1.k, ptr %rv, ptr %part)
  %part1.p = getelementptr inbounds i8, ptr %part, i64 512
  %p1 = load float, ptr %part1.p, align 4
  %s1.d = load i64, ptr %s1.depth
  %s1.s1 = getelementptr inbounds float, ptr %s1.stack1, i64 %s1.d
  store float %p1, ptr %s1.s1, align 4
  %s1.d.push = add i64 %s1.d, 1                                              ; push chunk k's partial
  store i64 %s1.d.push, ptr %s1.depth
  %s1.pushed = add i64 %s1.k, 1
  store i64 %s1.pushed, ptr %s1.count.slot
  br label %s1.merge.cond
s1.merge.cond:
  %s1.c = load i64, ptr %s1.count.slot
  %s1.odd = and i64 %s1.c, 1
  %s1.even = icmp eq i64 %s1.odd, 0
  %s1.fd = load i64, ptr %s1.depth
  %s1.two = icmp ugt i64 %s1.fd, 1
  %s1.merge = select i1 %s1.more, i1 %s1.even, i1 %s1.two
  br i1 %s1.merge, label %s1.merge.body, label %s1.tree.next
s1.merge.body:
  %s1.md1 = sub i64 %s1.fd, 1
  %s1.md2 = sub i64 %s1.fd, 2
  %s1.s1.1 = getelementptr inbounds float, ptr %s1.stack1, i64 %s1.md2
  %s1.s1.2 = getelementptr inbounds float, ptr %s1.stack1, i64 %s1.md1
  %s1.tx1 = load float, ptr %s1.s1.1, align 4
  %s1.ty1 = load float, ptr %s1.s1.2, align 4
  %s1.tc1 = fadd float %s1.tx1, %s1.ty1
  store float %s1.tc1, ptr %s1.s1.1, align 4
  store i64 %s1.md1, ptr %s1.depth
  %s1.c.half = lshr i64 %s1.c, 1
  store i64 %s1.c.half, ptr %s1.count.slot
  br label %s1.merge.cond
s1.tree.next:
  br i1 %s1.more, label %s1.tree.inc, label %s1.tree.done
s1.tree.inc:
  %s1.k.next = add i64 %s1.k, 1
  store i64 %s1.k.next, ptr %s1.k.slot
  br label %s1.tree.head
s1.tree.done:
  %s1.total1 = load float, ptr %s1.stack1, align 4
  %s1.value1.empty = icmp eq i64 %len, 0
  %s1.value1.sum = select i1 %s1.value1.empty, float 0x0000000000000000, float %s1.total1 ; the empty sum is +0
  %s1.rv1.p = getelementptr inbounds i8, ptr %rv, i64 256
  store float %s1.value1.sum, ptr %s1.rv1.p, align 4                         ; row value of reduction 1: sum float32 -> float32 (test_llvm_golden.cpp:121)
  %eo.rowbase = mul i64 %o, %len
  store i64 0, ptr %eo.slot
  ; element outputs of row o: the last pass over the row, reading the row values
  br label %eo.w16.cond
eo.w16.cond:
  %eo.w16 = load i64, ptr %eo.slot
  %eo.w16.next = add i64 %eo.w16, 16
  %eo.w16.more = icmp ule i64 %eo.w16.next, %len                             ; a whole step of 16 left
  br i1 %eo.w16.more, label %eo.w16.body, label %eo.w16.done
eo.w16.body:
  %eo.flat = add i64 %eo.rowbase, %eo.w16
  %el.out2.p = getelementptr inbounds float, ptr %el.out2, i64 %eo.flat
  %el.out2.m = load <16 x float>, ptr %el.out2.p, align 4                    ; the operand of reduction 1, kept in out0
  %rv1.p = getelementptr inbounds i8, ptr %rv, i64 256
  %rv1.one = load float, ptr %rv1.p, align 4                                 ; row value of reduction 1
  %rv1.ins = insertelement <16 x float> poison, float %rv1.one, i64 0
  %rv1 = shufflevector <16 x float> %rv1.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %el.eo.v5 = fdiv <16 x float> %el.out2.m, %rv1                             ; div (test_llvm_golden.cpp:121)
  %el.out2.p.1 = getelementptr inbounds float, ptr %el.out2, i64 %eo.flat
  store <16 x float> %el.eo.v5, ptr %el.out2.p.1, align 4                    ; store element output 0
  store i64 %eo.w16.next, ptr %eo.slot
  br label %eo.w16.cond
eo.w16.done:
  br label %eo.tail.cond
eo.tail.cond:
  %eo.tail = load i64, ptr %eo.slot
  %eo.tail.next = add i64 %eo.tail, 1
  %eo.tail.more = icmp ule i64 %eo.tail.next, %len                           ; an element left
  br i1 %eo.tail.more, label %eo.tail.body, label %eo.tail.done
eo.tail.body:
  %eot.flat = add i64 %eo.rowbase, %eo.tail
  %el.out2.p.2 = getelementptr inbounds float, ptr %el.out2, i64 %eot.flat
  %el.out2.m.1 = load float, ptr %el.out2.p.2, align 4                       ; the operand of reduction 1, kept in out0
  %rv1.p.1 = getelementptr inbounds i8, ptr %rv, i64 256
  %rv1.1 = load float, ptr %rv1.p.1, align 4                                 ; row value of reduction 1
  %el.eot.v5 = fdiv float %el.out2.m.1, %rv1.1                               ; div (test_llvm_golden.cpp:121)
  %el.out2.p.3 = getelementptr inbounds float, ptr %el.out2, i64 %eot.flat
  store float %el.eot.v5, ptr %el.out2.p.3, align 4                          ; store element output 0
  store i64 %eo.tail.next, ptr %eo.slot
  br label %eo.tail.cond
eo.tail.done:
  %o.next = add i64 %o, 1
  store i64 %o.next, ptr %o.slot
  br label %o.cond
o.done:
  ret void
}

declare double @llvm.fma.f64(double, double, double)
declare <16 x double> @llvm.fma.v16f64(<16 x double>, <16 x double>, <16 x double>)
declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.umin.i64(i64, i64)
declare i1 @llvm.vector.reduce.or.v16i1(<16 x i1>)
declare <8 x double> @llvm.x86.avx512.vpermi2var.pd.512(<8 x double>, <8 x i64>, <8 x double>)
@loom.exp2.sixteenths = internal constant [16 x double] [double 0x3FF0000000000000, double 0x3FF0B5586CF9890F, double 0x3FF172B83C7D517B, double 0x3FF2387A6E756238, double 0x3FF306FE0A31B715, double 0x3FF3DEA64C123422, double 0x3FF4BFDAD5362A27, double 0x3FF5AB07DD485429, double 0x3FF6A09E667F3BCD, double 0x3FF7A11473EB0187, double 0x3FF8ACE5422AA0DB, double 0x3FF9C49182A3F090, double 0x3FFAE89F995AD3AD, double 0x3FFC199BDD85529C, double 0x3FFD5818DCFBA487, double 0x3FFEA4AFA2A490DA]
declare float @loom_exp_f32(float) nounwind willreturn memory(none)
declare void @loom_exp_f32_v(ptr, ptr, i64) nounwind

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
