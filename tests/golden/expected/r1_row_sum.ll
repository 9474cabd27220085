; ---- Loom reduction kernel r1_row_sum (from "r1_row_sum"), LLVM IR for the host ----
; host schedule: 16 lanes per vector; 128 tasks of 4
; reduction: row (chunks of 8192, 256 lanes of runs of 4, butterfly, pairwise over chunks) order, 1 stage(s), 0 element output(s)
; reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:109), stage 0
; element space:
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous
; row space:
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous

; row order, stage 0: the partial of chunk k of row o
;   reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:109)
define internal void @r1_row_sum.chunk.s0(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr noalias %part) #0 {
entry:
  %lanes0 = alloca [256 x float], align 64
  %init.slot = alloca i64
  %i.slot = alloca i64
  %active.slot = alloca i64
  %s.slot = alloca i64
  %bf.l.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 48
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 56
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 64
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 96
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 float32, contiguous (test_llvm_golden.cpp:109)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
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
  %el.b0.v0.m = load <16 x float>, ptr %el.b0.v0.p, align 4                  ; load in0: float32 (contiguous, test_llvm_golden.cpp:109)
  %b1.r = add i64 %r, 16
  %b1.flat = add i64 %rowbase, %b1.r
  %el.b1.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b1.flat
  %el.b1.v0.m = load <16 x float>, ptr %el.b1.v0.p, align 4                  ; load in0: float32 (contiguous, test_llvm_golden.cpp:109)
  %b2.r = add i64 %r, 32
  %b2.flat = add i64 %rowbase, %b2.r
  %el.b2.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b2.flat
  %el.b2.v0.m = load <16 x float>, ptr %el.b2.v0.p, align 4                  ; load in0: float32 (contiguous, test_llvm_golden.cpp:109)
  %b3.r = add i64 %r, 48
  %b3.flat = add i64 %rowbase, %b3.r
  %el.b3.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %b3.flat
  %el.b3.v0.m = load <16 x float>, ptr %el.b3.v0.p, align 4                  ; load in0: float32 (contiguous, test_llvm_golden.cpp:109)
  %l4 = lshr i64 %block.w64, 2
  %lanes.at = and i64 %l4, 255                                               ; first lane of the block: (i / 4) mod 256
  ; reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:109)
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
  %acc0.1 = fadd <16 x float> %acc0, %x0.run0
  %acc0.2 = fadd <16 x float> %acc0.1, %x0.run1
  %acc0.3 = fadd <16 x float> %acc0.2, %x0.run2
  %acc0.4 = fadd <16 x float> %acc0.3, %x0.run3
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
  %el.t.v0.m = load float, ptr %el.t.v0.p, align 4                           ; load in0: float32 (contiguous, test_llvm_golden.cpp:109)
  %tl4 = lshr i64 %block.tail, 2
  %tlane = and i64 %tl4, 255                                                 ; lane (i / 4) mod 256
  %tl0.p = getelementptr inbounds float, ptr %lanes0, i64 %tlane
  %tacc0 = load float, ptr %tl0.p, align 4
  %tacc0.1 = fadd float %tacc0, %el.t.v0.m
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
  %bf.c0 = fadd <16 x float> %bf.x0, %bf.y0
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
  %bf.c0.1 = fadd float %bf.x0.1, %bf.y0.1
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

; rows [begin, end): every stage, the element outputs and the row outputs
define void @r1_row_sum_rows(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %rv = alloca [256 x i8], align 64
  %part = alloca [512 x i8], align 64
  %o.slot = alloca i64
  %s0.stack0 = alloca [64 x float], align 64
  %s0.depth = alloca i64
  %s0.k.slot = alloca i64
  %s0.count.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 48
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 56
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 64
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 96
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 float32, contiguous (test_llvm_golden.cpp:109)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  %row.in0.at = getelementptr inbounds i8, ptr %p, i64 24
  %row.in0 = load ptr, ptr %row.in0.at, align 8                              ; input 0 "row value 0" float32, contiguous (test_llvm_golden.cpp:109)
  %row.out0.at = getelementptr inbounds i8, ptr %p, i64 32
  %row.out0 = load ptr, ptr %row.out0.at, align 8                            ; output 0, contiguous
  %row.n.at = getelementptr inbounds i8, ptr %p, i64 40
  %row.n = load i32, ptr %row.n.at, align 4                                  ; elements of the iteration space
  %row.n.i64 = sext i32 %row.n to i64
  store i64 %begin, ptr %o.slot
  br label %o.cond
o.cond:
  %o = load i64, ptr %o.slot
  %o.more = icmp ult i64 %o, %end
  br i1 %o.more, label %o.body, label %o.done
o.body:
  ; stage 0: every chunk of row o, combined by the pairwise tree
  store float 0x8000000000000000, ptr %s0.stack0, align 4
  store i64 0, ptr %s0.depth
  store i64 0, ptr %s0.k.slot
  br label %s0.tree.head
s0.tree.head:
  %s0.k = load i64, ptr %s0.k.slot
  %s0.more = icmp ult i64 %s0.k, %chunks                                     ; a chunk left (else: the final fold)
  br i1 %s0.more, label %s0.tree.push, label %s0.merge.cond
s0.tree.push:
  call void @r1_row_sum.chunk.s0(ptr %p, i64 %o, i64 %s0.k, ptr %rv, ptr %part)
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
  %s0.tc0 = fadd float %s0.tx0, %s0.ty0
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
  %s0.value0.empty = icmp eq i64 %len, 0
  %s0.value0.sum = select i1 %s0.value0.empty, float 0x0000000000000000, float %s0.total0 ; the empty sum is +0
  %s0.rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  store float %s0.value0.sum, ptr %s0.rv0.p, align 4                         ; row value of reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:109)
  %rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0 = load float, ptr %rv0.p, align 4                                     ; row value of reduction 0
  %row.out0.p = getelementptr inbounds float, ptr %row.out0, i64 %o
  store float %rv0, ptr %row.out0.p, align 4                                 ; store row output 0
  %o.next = add i64 %o, 1
  store i64 %o.next, ptr %o.slot
  br label %o.cond
o.done:
  ret void
}

declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.umin.i64(i64, i64)

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
