; ---- Loom matmul kernel cm1_matmul_bias_gelu (from "cm1_matmul_bias_gelu"), LLVM IR for the host ----
; matmul float32: 6x32 micro tiles (2 vectors of 16 lanes per row, each lane its own output column; one fma per k in ascending k from +0), blocks of 96x512 outputs stepping 256 k at a time, the accumulators stored in the block's scratch tile between steps and reloaded; K 2048 in one chunk; operands packed into panels first (406 tasks of 1 panels), then 88 tasks of one block
; epilogue: 1 output(s); parameters: 128 header bytes, the epilogue's 32 at 128
; space: rank 2, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; in1: input 1, float32, row broadcast
; out0: float32, contiguous
; entry points: @cm1_matmul_bias_gelu_pack(params, begin, end) over panels, then @cm1_matmul_bias_gelu(params, begin, end) over blocks, one call per task

; one micro tile: 6 x 32 accumulators over kc values of k, one fma per k in ascending k
define internal void @cm1_matmul_bias_gelu_micro(ptr noalias readonly %a, ptr noalias readonly %b, ptr noalias %c, i64 %ldc, i64 %kc, i1 %start) #0 {
entry:
  %acc0.0.slot = alloca <16 x float>, align 64
  %acc0.1.slot = alloca <16 x float>, align 64
  %acc1.0.slot = alloca <16 x float>, align 64
  %acc1.1.slot = alloca <16 x float>, align 64
  %acc2.0.slot = alloca <16 x float>, align 64
  %acc2.1.slot = alloca <16 x float>, align 64
  %acc3.0.slot = alloca <16 x float>, align 64
  %acc3.1.slot = alloca <16 x float>, align 64
  %acc4.0.slot = alloca <16 x float>, align 64
  %acc4.1.slot = alloca <16 x float>, align 64
  %acc5.0.slot = alloca <16 x float>, align 64
  %acc5.1.slot = alloca <16 x float>, align 64
  %k.slot = alloca i64
  br i1 %start, label %zero, label %reload                                   ; a chunk's first K step starts from +0, the others from the scratch
reload:
  %c.row0 = mul i64 %ldc, 0
  %c.at0.0 = add i64 %c.row0, 0
  %c.p0.0 = getelementptr inbounds float, ptr %c, i64 %c.at0.0
  %c.0.0 = load <16 x float>, ptr %c.p0.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.0.0, ptr %acc0.0.slot, align 64
  %c.row0.1 = mul i64 %ldc, 0
  %c.at0.1 = add i64 %c.row0.1, 16
  %c.p0.1 = getelementptr inbounds float, ptr %c, i64 %c.at0.1
  %c.0.1 = load <16 x float>, ptr %c.p0.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.0.1, ptr %acc0.1.slot, align 64
  %c.row1 = mul i64 %ldc, 1
  %c.at1.0 = add i64 %c.row1, 0
  %c.p1.0 = getelementptr inbounds float, ptr %c, i64 %c.at1.0
  %c.1.0 = load <16 x float>, ptr %c.p1.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.1.0, ptr %acc1.0.slot, align 64
  %c.row1.1 = mul i64 %ldc, 1
  %c.at1.1 = add i64 %c.row1.1, 16
  %c.p1.1 = getelementptr inbounds float, ptr %c, i64 %c.at1.1
  %c.1.1 = load <16 x float>, ptr %c.p1.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.1.1, ptr %acc1.1.slot, align 64
  %c.row2 = mul i64 %ldc, 2
  %c.at2.0 = add i64 %c.row2, 0
  %c.p2.0 = getelementptr inbounds float, ptr %c, i64 %c.at2.0
  %c.2.0 = load <16 x float>, ptr %c.p2.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.2.0, ptr %acc2.0.slot, align 64
  %c.row2.1 = mul i64 %ldc, 2
  %c.at2.1 = add i64 %c.row2.1, 16
  %c.p2.1 = getelementptr inbounds float, ptr %c, i64 %c.at2.1
  %c.2.1 = load <16 x float>, ptr %c.p2.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.2.1, ptr %acc2.1.slot, align 64
  %c.row3 = mul i64 %ldc, 3
  %c.at3.0 = add i64 %c.row3, 0
  %c.p3.0 = getelementptr inbounds float, ptr %c, i64 %c.at3.0
  %c.3.0 = load <16 x float>, ptr %c.p3.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.3.0, ptr %acc3.0.slot, align 64
  %c.row3.1 = mul i64 %ldc, 3
  %c.at3.1 = add i64 %c.row3.1, 16
  %c.p3.1 = getelementptr inbounds float, ptr %c, i64 %c.at3.1
  %c.3.1 = load <16 x float>, ptr %c.p3.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.3.1, ptr %acc3.1.slot, align 64
  %c.row4 = mul i64 %ldc, 4
  %c.at4.0 = add i64 %c.row4, 0
  %c.p4.0 = getelementptr inbounds float, ptr %c, i64 %c.at4.0
  %c.4.0 = load <16 x float>, ptr %c.p4.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.4.0, ptr %acc4.0.slot, align 64
  %c.row4.1 = mul i64 %ldc, 4
  %c.at4.1 = add i64 %c.row4.1, 16
  %c.p4.1 = getelementptr inbounds float, ptr %c, i64 %c.at4.1
  %c.4.1 = load <16 x float>, ptr %c.p4.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.4.1, ptr %acc4.1.slot, align 64
  %c.row5 = mul i64 %ldc, 5
  %c.at5.0 = add i64 %c.row5, 0
  %c.p5.0 = getelementptr inbounds float, ptr %c, i64 %c.at5.0
  %c.5.0 = load <16 x float>, ptr %c.p5.0, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.5.0, ptr %acc5.0.slot, align 64
  %c.row5.1 = mul i64 %ldc, 5
  %c.at5.1 = add i64 %c.row5.1, 16
  %c.p5.1 = getelementptr inbounds float, ptr %c, i64 %c.at5.1
  %c.5.1 = load <16 x float>, ptr %c.p5.1, align 4                           ; the accumulators the previous K step stored
  store <16 x float> %c.5.1, ptr %acc5.1.slot, align 64
  br label %pre
zero:
  store <16 x float> zeroinitializer, ptr %acc0.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc0.1.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc1.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc1.1.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc2.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc2.1.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc3.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc3.1.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc4.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc4.1.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc5.0.slot, align 64             ; +0
  store <16 x float> zeroinitializer, ptr %acc5.1.slot, align 64             ; +0
  br label %pre
pre:
  %k4 = and i64 %kc, -4                                                      ; the steps taken four at a time
  store i64 0, ptr %k.slot
  ; four steps of k at a time, then one at a time: each output's fma chain in ascending k
  br label %main.cond
main.cond:
  %main = load i64, ptr %k.slot
  %main.more = icmp slt i64 %main, %k4
  br i1 %main.more, label %main.body, label %main.done
main.body:
  %acc0.0 = load <16 x float>, ptr %acc0.0.slot, align 64
  %acc0.1 = load <16 x float>, ptr %acc0.1.slot, align 64
  %acc1.0 = load <16 x float>, ptr %acc1.0.slot, align 64
  %acc1.1 = load <16 x float>, ptr %acc1.1.slot, align 64
  %acc2.0 = load <16 x float>, ptr %acc2.0.slot, align 64
  %acc2.1 = load <16 x float>, ptr %acc2.1.slot, align 64
  %acc3.0 = load <16 x float>, ptr %acc3.0.slot, align 64
  %acc3.1 = load <16 x float>, ptr %acc3.1.slot, align 64
  %acc4.0 = load <16 x float>, ptr %acc4.0.slot, align 64
  %acc4.1 = load <16 x float>, ptr %acc4.1.slot, align 64
  %acc5.0 = load <16 x float>, ptr %acc5.0.slot, align 64
  %acc5.1 = load <16 x float>, ptr %acc5.1.slot, align 64
  %b.off = mul i64 %main, 32
  %b.p = getelementptr inbounds float, ptr %b, i64 %b.off
  %b0 = load <16 x float>, ptr %b.p, align 4                                 ; B[k, j + 0 .. j + 15]
  %b.at = add i64 %b.off, 16
  %b.p.1 = getelementptr inbounds float, ptr %b, i64 %b.at
  %b1 = load <16 x float>, ptr %b.p.1, align 4                               ; B[k, j + 16 .. j + 31]
  %a.off = mul i64 %main, 6
  %a.p = getelementptr inbounds float, ptr %a, i64 %a.off
  %a0 = load float, ptr %a.p, align 4                                        ; A[i + 0, k]
  %a0.s.ins = insertelement <16 x float> poison, float %a0, i64 0
  %a0.s = shufflevector <16 x float> %a0.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc0.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s, <16 x float> %b0, <16 x float> %acc0.0)
  %acc0.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s, <16 x float> %b1, <16 x float> %acc0.1)
  %a.at = add i64 %a.off, 1
  %a.p.1 = getelementptr inbounds float, ptr %a, i64 %a.at
  %a1 = load float, ptr %a.p.1, align 4                                      ; A[i + 1, k]
  %a1.s.ins = insertelement <16 x float> poison, float %a1, i64 0
  %a1.s = shufflevector <16 x float> %a1.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc1.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s, <16 x float> %b0, <16 x float> %acc1.0)
  %acc1.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s, <16 x float> %b1, <16 x float> %acc1.1)
  %a.at.1 = add i64 %a.off, 2
  %a.p.2 = getelementptr inbounds float, ptr %a, i64 %a.at.1
  %a2 = load float, ptr %a.p.2, align 4                                      ; A[i + 2, k]
  %a2.s.ins = insertelement <16 x float> poison, float %a2, i64 0
  %a2.s = shufflevector <16 x float> %a2.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc2.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s, <16 x float> %b0, <16 x float> %acc2.0)
  %acc2.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s, <16 x float> %b1, <16 x float> %acc2.1)
  %a.at.2 = add i64 %a.off, 3
  %a.p.3 = getelementptr inbounds float, ptr %a, i64 %a.at.2
  %a3 = load float, ptr %a.p.3, align 4                                      ; A[i + 3, k]
  %a3.s.ins = insertelement <16 x float> poison, float %a3, i64 0
  %a3.s = shufflevector <16 x float> %a3.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc3.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s, <16 x float> %b0, <16 x float> %acc3.0)
  %acc3.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s, <16 x float> %b1, <16 x float> %acc3.1)
  %a.at.3 = add i64 %a.off, 4
  %a.p.4 = getelementptr inbounds float, ptr %a, i64 %a.at.3
  %a4 = load float, ptr %a.p.4, align 4                                      ; A[i + 4, k]
  %a4.s.ins = insertelement <16 x float> poison, float %a4, i64 0
  %a4.s = shufflevector <16 x float> %a4.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc4.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s, <16 x float> %b0, <16 x float> %acc4.0)
  %acc4.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s, <16 x float> %b1, <16 x float> %acc4.1)
  %a.at.4 = add i64 %a.off, 5
  %a.p.5 = getelementptr inbounds float, ptr %a, i64 %a.at.4
  %a5 = load float, ptr %a.p.5, align 4                                      ; A[i + 5, k]
  %a5.s.ins = insertelement <16 x float> poison, float %a5, i64 0
  %a5.s = shufflevector <16 x float> %a5.s.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %acc5.0.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s, <16 x float> %b0, <16 x float> %acc5.0)
  %acc5.1.1 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s, <16 x float> %b1, <16 x float> %acc5.1)
  %k.u = add i64 %main, 1
  %b.off.1 = mul i64 %k.u, 32
  %b.p.2 = getelementptr inbounds float, ptr %b, i64 %b.off.1
  %b0.1 = load <16 x float>, ptr %b.p.2, align 4                             ; B[k, j + 0 .. j + 15]
  %b.at.1 = add i64 %b.off.1, 16
  %b.p.3 = getelementptr inbounds float, ptr %b, i64 %b.at.1
  %b1.1 = load <16 x float>, ptr %b.p.3, align 4                             ; B[k, j + 16 .. j + 31]
  %a.off.1 = mul i64 %k.u, 6
  %a.p.6 = getelementptr inbounds float, ptr %a, i64 %a.off.1
  %a0.1 = load float, ptr %a.p.6, align 4                                    ; A[i + 0, k]
  %a0.s.ins.1 = insertelement <16 x float> poison, float %a0.1, i64 0
  %a0.s.1 = shufflevector <16 x float> %a0.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc0.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.1, <16 x float> %b0.1, <16 x float> %acc0.0.1)
  %acc0.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.1, <16 x float> %b1.1, <16 x float> %acc0.1.1)
  %a.at.5 = add i64 %a.off.1, 1
  %a.p.7 = getelementptr inbounds float, ptr %a, i64 %a.at.5
  %a1.1 = load float, ptr %a.p.7, align 4                                    ; A[i + 1, k]
  %a1.s.ins.1 = insertelement <16 x float> poison, float %a1.1, i64 0
  %a1.s.1 = shufflevector <16 x float> %a1.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc1.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.1, <16 x float> %b0.1, <16 x float> %acc1.0.1)
  %acc1.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.1, <16 x float> %b1.1, <16 x float> %acc1.1.1)
  %a.at.6 = add i64 %a.off.1, 2
  %a.p.8 = getelementptr inbounds float, ptr %a, i64 %a.at.6
  %a2.1 = load float, ptr %a.p.8, align 4                                    ; A[i + 2, k]
  %a2.s.ins.1 = insertelement <16 x float> poison, float %a2.1, i64 0
  %a2.s.1 = shufflevector <16 x float> %a2.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc2.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.1, <16 x float> %b0.1, <16 x float> %acc2.0.1)
  %acc2.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.1, <16 x float> %b1.1, <16 x float> %acc2.1.1)
  %a.at.7 = add i64 %a.off.1, 3
  %a.p.9 = getelementptr inbounds float, ptr %a, i64 %a.at.7
  %a3.1 = load float, ptr %a.p.9, align 4                                    ; A[i + 3, k]
  %a3.s.ins.1 = insertelement <16 x float> poison, float %a3.1, i64 0
  %a3.s.1 = shufflevector <16 x float> %a3.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc3.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.1, <16 x float> %b0.1, <16 x float> %acc3.0.1)
  %acc3.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.1, <16 x float> %b1.1, <16 x float> %acc3.1.1)
  %a.at.8 = add i64 %a.off.1, 4
  %a.p.10 = getelementptr inbounds float, ptr %a, i64 %a.at.8
  %a4.1 = load float, ptr %a.p.10, align 4                                   ; A[i + 4, k]
  %a4.s.ins.1 = insertelement <16 x float> poison, float %a4.1, i64 0
  %a4.s.1 = shufflevector <16 x float> %a4.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc4.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.1, <16 x float> %b0.1, <16 x float> %acc4.0.1)
  %acc4.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.1, <16 x float> %b1.1, <16 x float> %acc4.1.1)
  %a.at.9 = add i64 %a.off.1, 5
  %a.p.11 = getelementptr inbounds float, ptr %a, i64 %a.at.9
  %a5.1 = load float, ptr %a.p.11, align 4                                   ; A[i + 5, k]
  %a5.s.ins.1 = insertelement <16 x float> poison, float %a5.1, i64 0
  %a5.s.1 = shufflevector <16 x float> %a5.s.ins.1, <16 x float> poison, <16 x i32> zeroinitializer
  %acc5.0.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.1, <16 x float> %b0.1, <16 x float> %acc5.0.1)
  %acc5.1.2 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.1, <16 x float> %b1.1, <16 x float> %acc5.1.1)
  %k.u.1 = add i64 %main, 2
  %b.off.2 = mul i64 %k.u.1, 32
  %b.p.4 = getelementptr inbounds float, ptr %b, i64 %b.off.2
  %b0.2 = load <16 x float>, ptr %b.p.4, align 4                             ; B[k, j + 0 .. j + 15]
  %b.at.2 = add i64 %b.off.2, 16
  %b.p.5 = getelementptr inbounds float, ptr %b, i64 %b.at.2
  %b1.2 = load <16 x float>, ptr %b.p.5, align 4                             ; B[k, j + 16 .. j + 31]
  %a.off.2 = mul i64 %k.u.1, 6
  %a.p.12 = getelementptr inbounds float, ptr %a, i64 %a.off.2
  %a0.2 = load float, ptr %a.p.12, align 4                                   ; A[i + 0, k]
  %a0.s.ins.2 = insertelement <16 x float> poison, float %a0.2, i64 0
  %a0.s.2 = shufflevector <16 x float> %a0.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc0.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.2, <16 x float> %b0.2, <16 x float> %acc0.0.2)
  %acc0.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.2, <16 x float> %b1.2, <16 x float> %acc0.1.2)
  %a.at.10 = add i64 %a.off.2, 1
  %a.p.13 = getelementptr inbounds float, ptr %a, i64 %a.at.10
  %a1.2 = load float, ptr %a.p.13, align 4                                   ; A[i + 1, k]
  %a1.s.ins.2 = insertelement <16 x float> poison, float %a1.2, i64 0
  %a1.s.2 = shufflevector <16 x float> %a1.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc1.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.2, <16 x float> %b0.2, <16 x float> %acc1.0.2)
  %acc1.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.2, <16 x float> %b1.2, <16 x float> %acc1.1.2)
  %a.at.11 = add i64 %a.off.2, 2
  %a.p.14 = getelementptr inbounds float, ptr %a, i64 %a.at.11
  %a2.2 = load float, ptr %a.p.14, align 4                                   ; A[i + 2, k]
  %a2.s.ins.2 = insertelement <16 x float> poison, float %a2.2, i64 0
  %a2.s.2 = shufflevector <16 x float> %a2.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc2.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.2, <16 x float> %b0.2, <16 x float> %acc2.0.2)
  %acc2.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.2, <16 x float> %b1.2, <16 x float> %acc2.1.2)
  %a.at.12 = add i64 %a.off.2, 3
  %a.p.15 = getelementptr inbounds float, ptr %a, i64 %a.at.12
  %a3.2 = load float, ptr %a.p.15, align 4                                   ; A[i + 3, k]
  %a3.s.ins.2 = insertelement <16 x float> poison, float %a3.2, i64 0
  %a3.s.2 = shufflevector <16 x float> %a3.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc3.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.2, <16 x float> %b0.2, <16 x float> %acc3.0.2)
  %acc3.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.2, <16 x float> %b1.2, <16 x float> %acc3.1.2)
  %a.at.13 = add i64 %a.off.2, 4
  %a.p.16 = getelementptr inbounds float, ptr %a, i64 %a.at.13
  %a4.2 = load float, ptr %a.p.16, align 4                                   ; A[i + 4, k]
  %a4.s.ins.2 = insertelement <16 x float> poison, float %a4.2, i64 0
  %a4.s.2 = shufflevector <16 x float> %a4.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc4.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.2, <16 x float> %b0.2, <16 x float> %acc4.0.2)
  %acc4.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.2, <16 x float> %b1.2, <16 x float> %acc4.1.2)
  %a.at.14 = add i64 %a.off.2, 5
  %a.p.17 = getelementptr inbounds float, ptr %a, i64 %a.at.14
  %a5.2 = load float, ptr %a.p.17, align 4                                   ; A[i + 5, k]
  %a5.s.ins.2 = insertelement <16 x float> poison, float %a5.2, i64 0
  %a5.s.2 = shufflevector <16 x float> %a5.s.ins.2, <16 x float> poison, <16 x i32> zeroinitializer
  %acc5.0.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.2, <16 x float> %b0.2, <16 x float> %acc5.0.2)
  %acc5.1.3 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.2, <16 x float> %b1.2, <16 x float> %acc5.1.2)
  %k.u.2 = add i64 %main, 3
  %b.off.3 = mul i64 %k.u.2, 32
  %b.p.6 = getelementptr inbounds float, ptr %b, i64 %b.off.3
  %b0.3 = load <16 x float>, ptr %b.p.6, align 4                             ; B[k, j + 0 .. j + 15]
  %b.at.3 = add i64 %b.off.3, 16
  %b.p.7 = getelementptr inbounds float, ptr %b, i64 %b.at.3
  %b1.3 = load <16 x float>, ptr %b.p.7, align 4                             ; B[k, j + 16 .. j + 31]
  %a.off.3 = mul i64 %k.u.2, 6
  %a.p.18 = getelementptr inbounds float, ptr %a, i64 %a.off.3
  %a0.3 = load float, ptr %a.p.18, align 4                                   ; A[i + 0, k]
  %a0.s.ins.3 = insertelement <16 x float> poison, float %a0.3, i64 0
  %a0.s.3 = shufflevector <16 x float> %a0.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc0.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.3, <16 x float> %b0.3, <16 x float> %acc0.0.3)
  %acc0.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.3, <16 x float> %b1.3, <16 x float> %acc0.1.3)
  %a.at.15 = add i64 %a.off.3, 1
  %a.p.19 = getelementptr inbounds float, ptr %a, i64 %a.at.15
  %a1.3 = load float, ptr %a.p.19, align 4                                   ; A[i + 1, k]
  %a1.s.ins.3 = insertelement <16 x float> poison, float %a1.3, i64 0
  %a1.s.3 = shufflevector <16 x float> %a1.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc1.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.3, <16 x float> %b0.3, <16 x float> %acc1.0.3)
  %acc1.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.3, <16 x float> %b1.3, <16 x float> %acc1.1.3)
  %a.at.16 = add i64 %a.off.3, 2
  %a.p.20 = getelementptr inbounds float, ptr %a, i64 %a.at.16
  %a2.3 = load float, ptr %a.p.20, align 4                                   ; A[i + 2, k]
  %a2.s.ins.3 = insertelement <16 x float> poison, float %a2.3, i64 0
  %a2.s.3 = shufflevector <16 x float> %a2.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc2.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.3, <16 x float> %b0.3, <16 x float> %acc2.0.3)
  %acc2.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.3, <16 x float> %b1.3, <16 x float> %acc2.1.3)
  %a.at.17 = add i64 %a.off.3, 3
  %a.p.21 = getelementptr inbounds float, ptr %a, i64 %a.at.17
  %a3.3 = load float, ptr %a.p.21, align 4                                   ; A[i + 3, k]
  %a3.s.ins.3 = insertelement <16 x float> poison, float %a3.3, i64 0
  %a3.s.3 = shufflevector <16 x float> %a3.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc3.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.3, <16 x float> %b0.3, <16 x float> %acc3.0.3)
  %acc3.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.3, <16 x float> %b1.3, <16 x float> %acc3.1.3)
  %a.at.18 = add i64 %a.off.3, 4
  %a.p.22 = getelementptr inbounds float, ptr %a, i64 %a.at.18
  %a4.3 = load float, ptr %a.p.22, align 4                                   ; A[i + 4, k]
  %a4.s.ins.3 = insertelement <16 x float> poison, float %a4.3, i64 0
  %a4.s.3 = shufflevector <16 x float> %a4.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc4.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.3, <16 x float> %b0.3, <16 x float> %acc4.0.3)
  %acc4.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.3, <16 x float> %b1.3, <16 x float> %acc4.1.3)
  %a.at.19 = add i64 %a.off.3, 5
  %a.p.23 = getelementptr inbounds float, ptr %a, i64 %a.at.19
  %a5.3 = load float, ptr %a.p.23, align 4                                   ; A[i + 5, k]
  %a5.s.ins.3 = insertelement <16 x float> poison, float %a5.3, i64 0
  %a5.s.3 = shufflevector <16 x float> %a5.s.ins.3, <16 x float> poison, <16 x i32> zeroinitializer
  %acc5.0.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.3, <16 x float> %b0.3, <16 x float> %acc5.0.3)
  %acc5.1.4 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.3, <16 x float> %b1.3, <16 x float> %acc5.1.3)
  store <16 x float> %acc0.0.4, ptr %acc0.0.slot, align 64
  store <16 x float> %acc0.1.4, ptr %acc0.1.slot, align 64
  store <16 x float> %acc1.0.4, ptr %acc1.0.slot, align 64
  store <16 x float> %acc1.1.4, ptr %acc1.1.slot, align 64
  store <16 x float> %acc2.0.4, ptr %acc2.0.slot, align 64
  store <16 x float> %acc2.1.4, ptr %acc2.1.slot, align 64
  store <16 x float> %acc3.0.4, ptr %acc3.0.slot, align 64
  store <16 x float> %acc3.1.4, ptr %acc3.1.slot, align 64
  store <16 x float> %acc4.0.4, ptr %acc4.0.slot, align 64
  store <16 x float> %acc4.1.4, ptr %acc4.1.slot, align 64
  store <16 x float> %acc5.0.4, ptr %acc5.0.slot, align 64
  store <16 x float> %acc5.1.4, ptr %acc5.1.slot, align 64
  %main.next = add i64 %main, 4
  store i64 %main.next, ptr %k.slot
  br label %main.cond
main.done:
  br label %tail.cond
tail.cond:
  %tail = load i64, ptr %k.slot
  %tail.more = icmp slt i64 %tail, %kc
  br i1 %tail.more, label %tail.body, label %tail.done
tail.body:
  %acc0.0.5 = load <16 x float>, ptr %acc0.0.slot, align 64
  %acc0.1.5 = load <16 x float>, ptr %acc0.1.slot, align 64
  %acc1.0.5 = load <16 x float>, ptr %acc1.0.slot, align 64
  %acc1.1.5 = load <16 x float>, ptr %acc1.1.slot, align 64
  %acc2.0.5 = load <16 x float>, ptr %acc2.0.slot, align 64
  %acc2.1.5 = load <16 x float>, ptr %acc2.1.slot, align 64
  %acc3.0.5 = load <16 x float>, ptr %acc3.0.slot, align 64
  %acc3.1.5 = load <16 x float>, ptr %acc3.1.slot, align 64
  %acc4.0.5 = load <16 x float>, ptr %acc4.0.slot, align 64
  %acc4.1.5 = load <16 x float>, ptr %acc4.1.slot, align 64
  %acc5.0.5 = load <16 x float>, ptr %acc5.0.slot, align 64
  %acc5.1.5 = load <16 x float>, ptr %acc5.1.slot, align 64
  %b.off.4 = mul i64 %tail, 32
  %b.p.8 = getelementptr inbounds float, ptr %b, i64 %b.off.4
  %b0.4 = load <16 x float>, ptr %b.p.8, align 4                             ; B[k, j + 0 .. j + 15]
  %b.at.4 = add i64 %b.off.4, 16
  %b.p.9 = getelementptr inbounds float, ptr %b, i64 %b.at.4
  %b1.4 = load <16 x float>, ptr %b.p.9, align 4                             ; B[k, j + 16 .. j + 31]
  %a.off.4 = mul i64 %tail, 6
  %a.p.24 = getelementptr inbounds float, ptr %a, i64 %a.off.4
  %a0.4 = load float, ptr %a.p.24, align 4                                   ; A[i + 0, k]
  %a0.s.ins.4 = insertelement <16 x float> poison, float %a0.4, i64 0
  %a0.s.4 = shufflevector <16 x float> %a0.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc0.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.4, <16 x float> %b0.4, <16 x float> %acc0.0.5)
  %acc0.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a0.s.4, <16 x float> %b1.4, <16 x float> %acc0.1.5)
  %a.at.20 = add i64 %a.off.4, 1
  %a.p.25 = getelementptr inbounds float, ptr %a, i64 %a.at.20
  %a1.4 = load float, ptr %a.p.25, align 4                                   ; A[i + 1, k]
  %a1.s.ins.4 = insertelement <16 x float> poison, float %a1.4, i64 0
  %a1.s.4 = shufflevector <16 x float> %a1.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc1.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.4, <16 x float> %b0.4, <16 x float> %acc1.0.5)
  %acc1.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a1.s.4, <16 x float> %b1.4, <16 x float> %acc1.1.5)
  %a.at.21 = add i64 %a.off.4, 2
  %a.p.26 = getelementptr inbounds float, ptr %a, i64 %a.at.21
  %a2.4 = load float, ptr %a.p.26, align 4                                   ; A[i + 2, k]
  %a2.s.ins.4 = insertelement <16 x float> poison, float %a2.4, i64 0
  %a2.s.4 = shufflevector <16 x float> %a2.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc2.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.4, <16 x float> %b0.4, <16 x float> %acc2.0.5)
  %acc2.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a2.s.4, <16 x float> %b1.4, <16 x float> %acc2.1.5)
  %a.at.22 = add i64 %a.off.4, 3
  %a.p.27 = getelementptr inbounds float, ptr %a, i64 %a.at.22
  %a3.4 = load float, ptr %a.p.27, align 4                                   ; A[i + 3, k]
  %a3.s.ins.4 = insertelement <16 x float> poison, float %a3.4, i64 0
  %a3.s.4 = shufflevector <16 x float> %a3.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc3.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.4, <16 x float> %b0.4, <16 x float> %acc3.0.5)
  %acc3.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a3.s.4, <16 x float> %b1.4, <16 x float> %acc3.1.5)
  %a.at.23 = add i64 %a.off.4, 4
  %a.p.28 = getelementptr inbounds float, ptr %a, i64 %a.at.23
  %a4.4 = load float, ptr %a.p.28, align 4                                   ; A[i + 4, k]
  %a4.s.ins.4 = insertelement <16 x float> poison, float %a4.4, i64 0
  %a4.s.4 = shufflevector <16 x float> %a4.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc4.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.4, <16 x float> %b0.4, <16 x float> %acc4.0.5)
  %acc4.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a4.s.4, <16 x float> %b1.4, <16 x float> %acc4.1.5)
  %a.at.24 = add i64 %a.off.4, 5
  %a.p.29 = getelementptr inbounds float, ptr %a, i64 %a.at.24
  %a5.4 = load float, ptr %a.p.29, align 4                                   ; A[i + 5, k]
  %a5.s.ins.4 = insertelement <16 x float> poison, float %a5.4, i64 0
  %a5.s.4 = shufflevector <16 x float> %a5.s.ins.4, <16 x float> poison, <16 x i32> zeroinitializer
  %acc5.0.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.4, <16 x float> %b0.4, <16 x float> %acc5.0.5)
  %acc5.1.6 = call <16 x float> @llvm.fma.v16f32(<16 x float> %a5.s.4, <16 x float> %b1.4, <16 x float> %acc5.1.5)
  store <16 x float> %acc0.0.6, ptr %acc0.0.slot, align 64
  store <16 x float> %acc0.1.6, ptr %acc0.1.slot, align 64
  store <16 x float> %acc1.0.6, ptr %acc1.0.slot, align 64
  store <16 x float> %acc1.1.6, ptr %acc1.1.slot, align 64
  store <16 x float> %acc2.0.6, ptr %acc2.0.slot, align 64
  store <16 x float> %acc2.1.6, ptr %acc2.1.slot, align 64
  store <16 x float> %acc3.0.6, ptr %acc3.0.slot, align 64
  store <16 x float> %acc3.1.6, ptr %acc3.1.slot, align 64
  store <16 x float> %acc4.0.6, ptr %acc4.0.slot, align 64
  store <16 x float> %acc4.1.6, ptr %acc4.1.slot, align 64
  store <16 x float> %acc5.0.6, ptr %acc5.0.slot, align 64
  store <16 x float> %acc5.1.6, ptr %acc5.1.slot, align 64
  %tail.next = add i64 %tail, 1
  store i64 %tail.next, ptr %k.slot
  br label %tail.cond
tail.done:
  %out0.0 = load <16 x float>, ptr %acc0.0.slot, align 64
  %c.row0.2 = mul i64 %ldc, 0
  %c.at0.0.1 = add i64 %c.row0.2, 0
  %c.p0.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at0.0.1
  store <16 x float> %out0.0, ptr %c.p0.0.1, align 4
  %out0.1 = load <16 x float>, ptr %acc0.1.slot, align 64
  %c.row0.3 = mul i64 %ldc, 0
  %c.at0.1.1 = add i64 %c.row0.3, 16
  %c.p0.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at0.1.1
  store <16 x float> %out0.1, ptr %c.p0.1.1, align 4
  %out1.0 = load <16 x float>, ptr %acc1.0.slot, align 64
  %c.row1.2 = mul i64 %ldc, 1
  %c.at1.0.1 = add i64 %c.row1.2, 0
  %c.p1.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at1.0.1
  store <16 x float> %out1.0, ptr %c.p1.0.1, align 4
  %out1.1 = load <16 x float>, ptr %acc1.1.slot, align 64
  %c.row1.3 = mul i64 %ldc, 1
  %c.at1.1.1 = add i64 %c.row1.3, 16
  %c.p1.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at1.1.1
  store <16 x float> %out1.1, ptr %c.p1.1.1, align 4
  %out2.0 = load <16 x float>, ptr %acc2.0.slot, align 64
  %c.row2.2 = mul i64 %ldc, 2
  %c.at2.0.1 = add i64 %c.row2.2, 0
  %c.p2.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at2.0.1
  store <16 x float> %out2.0, ptr %c.p2.0.1, align 4
  %out2.1 = load <16 x float>, ptr %acc2.1.slot, align 64
  %c.row2.3 = mul i64 %ldc, 2
  %c.at2.1.1 = add i64 %c.row2.3, 16
  %c.p2.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at2.1.1
  store <16 x float> %out2.1, ptr %c.p2.1.1, align 4
  %out3.0 = load <16 x float>, ptr %acc3.0.slot, align 64
  %c.row3.2 = mul i64 %ldc, 3
  %c.at3.0.1 = add i64 %c.row3.2, 0
  %c.p3.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at3.0.1
  store <16 x float> %out3.0, ptr %c.p3.0.1, align 4
  %out3.1 = load <16 x float>, ptr %acc3.1.slot, align 64
  %c.row3.3 = mul i64 %ldc, 3
  %c.at3.1.1 = add i64 %c.row3.3, 16
  %c.p3.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at3.1.1
  store <16 x float> %out3.1, ptr %c.p3.1.1, align 4
  %out4.0 = load <16 x float>, ptr %acc4.0.slot, align 64
  %c.row4.2 = mul i64 %ldc, 4
  %c.at4.0.1 = add i64 %c.row4.2, 0
  %c.p4.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at4.0.1
  store <16 x float> %out4.0, ptr %c.p4.0.1, align 4
  %out4.1 = load <16 x float>, ptr %acc4.1.slot, align 64
  %c.row4.3 = mul i64 %ldc, 4
  %c.at4.1.1 = add i64 %c.row4.3, 16
  %c.p4.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at4.1.1
  store <16 x float> %out4.1, ptr %c.p4.1.1, align 4
  %out5.0 = load <16 x float>, ptr %acc5.0.slot, align 64
  %c.row5.2 = mul i64 %ldc, 5
  %c.at5.0.1 = add i64 %c.row5.2, 0
  %c.p5.0.1 = getelementptr inbounds float, ptr %c, i64 %c.at5.0.1
  store <16 x float> %out5.0, ptr %c.p5.0.1, align 4
  %out5.1 = load <16 x float>, ptr %acc5.1.slot, align 64
  %c.row5.3 = mul i64 %ldc, 5
  %c.at5.1.1 = add i64 %c.row5.3, 16
  %c.p5.1.1 = getelementptr inbounds float, ptr %c, i64 %c.at5.1.1
  store <16 x float> %out5.1, ptr %c.p5.1.1, align 4
  ret void
}

; the first pass: panels [begin, end) of A (row panels), then of B (column panels)
define void @cm1_matmul_bias_gelu_pack(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %u.slot = alloca i64
  %ak.slot = alloca i64
  %bkv.slot = alloca i64
  %bc.slot = alloca i64
  %bk.slot = alloca i64
  ; parameters (host_plan.hpp, kProductHeaderFields)
  %A.at = getelementptr inbounds i8, ptr %p, i64 0
  %A = load ptr, ptr %A.at, align 8
  %B.at = getelementptr inbounds i8, ptr %p, i64 8
  %B = load ptr, ptr %B.at, align 8
  %Ap.at = getelementptr inbounds i8, ptr %p, i64 16
  %Ap = load ptr, ptr %Ap.at, align 8
  %Bp.at = getelementptr inbounds i8, ptr %p, i64 24
  %Bp = load ptr, ptr %Bp.at, align 8
  %M.at = getelementptr inbounds i8, ptr %p, i64 40
  %M = load i64, ptr %M.at, align 8
  %N.at = getelementptr inbounds i8, ptr %p, i64 48
  %N = load i64, ptr %N.at, align 8
  %K.at = getelementptr inbounds i8, ptr %p, i64 56
  %K = load i64, ptr %K.at, align 8
  %sam.at = getelementptr inbounds i8, ptr %p, i64 64
  %sam = load i64, ptr %sam.at, align 8
  %sak.at = getelementptr inbounds i8, ptr %p, i64 72
  %sak = load i64, ptr %sak.at, align 8
  %sbk.at = getelementptr inbounds i8, ptr %p, i64 80
  %sbk = load i64, ptr %sbk.at, align 8
  %sbn.at = getelementptr inbounds i8, ptr %p, i64 88
  %sbn = load i64, ptr %sbn.at, align 8
  %rowp.at = getelementptr inbounds i8, ptr %p, i64 112
  %rowp = load i64, ptr %rowp.at, align 8
  %colp.at = getelementptr inbounds i8, ptr %p, i64 120
  %colp = load i64, ptr %colp.at, align 8
  %M1 = sub i64 %M, 1
  %N1 = sub i64 %N, 1
  store i64 %begin, ptr %u.slot
  br label %u.cond
u.cond:
  %u = load i64, ptr %u.slot
  %u.more = icmp ult i64 %u, %end
  br i1 %u.more, label %u.body, label %u.done
u.body:
  %is.a = icmp ult i64 %u, %rowp
  br i1 %is.a, label %pack.a, label %pack.b
pack.a:
  %a.src = getelementptr inbounds float, ptr %A, i64 0
  %a.po = mul i64 0, %rowp
  %a.po1 = mul i64 %a.po, %K
  %a.po2 = mul i64 %a.po1, 6
  %a.dst = getelementptr inbounds float, ptr %Ap, i64 %a.po2                 ; the batch entry's A panels
  %row0 = mul i64 %u, 6
  %row0.1 = add i64 %row0, 0
  %row0.in = icmp slt i64 %row0.1, %M
  %row0.c = select i1 %row0.in, i64 %row0.1, i64 %M1
  %row0.off = mul i64 %row0.c, %sam
  %row1 = add i64 %row0, 1
  %row1.in = icmp slt i64 %row1, %M
  %row1.c = select i1 %row1.in, i64 %row1, i64 %M1
  %row1.off = mul i64 %row1.c, %sam
  %row2 = add i64 %row0, 2
  %row2.in = icmp slt i64 %row2, %M
  %row2.c = select i1 %row2.in, i64 %row2, i64 %M1
  %row2.off = mul i64 %row2.c, %sam
  %row3 = add i64 %row0, 3
  %row3.in = icmp slt i64 %row3, %M
  %row3.c = select i1 %row3.in, i64 %row3, i64 %M1
  %row3.off = mul i64 %row3.c, %sam
  %row4 = add i64 %row0, 4
  %row4.in = icmp slt i64 %row4, %M
  %row4.c = select i1 %row4.in, i64 %row4, i64 %M1
  %row4.off = mul i64 %row4.c, %sam
  %row5 = add i64 %row0, 5
  %row5.in = icmp slt i64 %row5, %M
  %row5.c = select i1 %row5.in, i64 %row5, i64 %M1
  %row5.off = mul i64 %row5.c, %sam
  store i64 0, ptr %ak.slot
  br label %ak.cond
ak.cond:
  %ak = load i64, ptr %ak.slot
  %ak.more = icmp ult i64 %ak, %K
  br i1 %ak.more, label %ak.body, label %ak.done
ak.body:
  %ak.off = mul i64 %ak, %sak
  %pk.k0 = and i64 %ak, -256
  %pk.kk = and i64 %ak, 255
  %pk.left = sub i64 %K, %pk.k0
  %pk.kc = call i64 @llvm.umin.i64(i64 %pk.left, i64 256)
  %pk.s0 = mul i64 %pk.k0, %rowp
  %pk.s1 = mul i64 %u, %pk.kc
  %pk.s2 = add i64 %pk.s0, %pk.s1
  %pk.s3 = add i64 %pk.s2, %pk.kk
  %pk.at = mul i64 %pk.s3, 6
  %a.at = add i64 %row0.off, %ak.off
  %a.ptr = getelementptr inbounds float, ptr %a.src, i64 %a.at
  %a.x = load float, ptr %a.ptr, align 4
  %a.v = select i1 %row0.in, float %a.x, float 0.0
  %a.d = add i64 %pk.at, 0
  %a.dp = getelementptr inbounds float, ptr %a.dst, i64 %a.d
  store float %a.v, ptr %a.dp, align 4
  %a.at.1 = add i64 %row1.off, %ak.off
  %a.ptr.1 = getelementptr inbounds float, ptr %a.src, i64 %a.at.1
  %a.x.1 = load float, ptr %a.ptr.1, align 4
  %a.v.1 = select i1 %row1.in, float %a.x.1, float 0.0
  %a.d.1 = add i64 %pk.at, 1
  %a.dp.1 = getelementptr inbounds float, ptr %a.dst, i64 %a.d.1
  store float %a.v.1, ptr %a.dp.1, align 4
  %a.at.2 = add i64 %row2.off, %ak.off
  %a.ptr.2 = getelementptr inbounds float, ptr %a.src, i64 %a.at.2
  %a.x.2 = load float, ptr %a.ptr.2, align 4
  %a.v.2 = select i1 %row2.in, float %a.x.2, float 0.0
  %a.d.2 = add i64 %pk.at, 2
  %a.dp.2 = getelementptr inbounds float, ptr %a.dst, i64 %a.d.2
  store float %a.v.2, ptr %a.dp.2, align 4
  %a.at.3 = add i64 %row3.off, %ak.off
  %a.ptr.3 = getelementptr inbounds float, ptr %a.src, i64 %a.at.3
  %a.x.3 = load float, ptr %a.ptr.3, align 4
  %a.v.3 = select i1 %row3.in, float %a.x.3, float 0.0
  %a.d.3 = add i64 %pk.at, 3
  %a.dp.3 = getelementptr inbounds float, ptr %a.dst, i64 %a.d.3
  store float %a.v.3, ptr %a.dp.3, align 4
  %a.at.4 = add i64 %row4.off, %ak.off
  %a.ptr.4 = getelementptr inbounds float, ptr %a.src, i64 %a.at.4
  %a.x.4 = load float, ptr %a.ptr.4, align 4
  %a.v.4 = select i1 %row4.in, float %a.x.4, float 0.0
  %a.d.4 = add i64 %pk.at, 4
  %a.dp.4 = getelementptr inbounds float, ptr %a.dst, i64 %a.d.4
  store float %a.v.4, ptr %a.dp.4, align 4
  %a.at.5 = add i64 %row5.off, %ak.off
  %a.ptr.5 = getelementptr inbounds float, ptr %a.src, i64 %a.at.5
  %a.x.5 = load float, ptr %a.ptr.5, align 4
  %a.v.5 = select i1 %row5.in, float %a.x.5, float 0.0
  %a.d.5 = add i64 %pk.at, 5
  %a.dp.5 = getelementptr inbounds float, ptr %a.dst, i64 %a.d.5
  store float %a.v.5, ptr %a.dp.5, align 4
  %ak.next = add i64 %ak, 1
  store i64 %ak.next, ptr %ak.slot
  br label %ak.cond
ak.done:
  br label %pack.next
pack.b:
  %b.u = sub i64 %u, %rowp
  %b.src = getelementptr inbounds float, ptr %B, i64 0
  %b.po = mul i64 0, %colp
  %b.po1 = mul i64 %b.po, %K
  %b.po2 = mul i64 %b.po1, 32
  %b.dst = getelementptr inbounds float, ptr %Bp, i64 %b.po2                 ; the batch entry's B panels
  %col0 = mul i64 %b.u, 32
  %col.end = add i64 %col0, 32
  %b.whole = icmp sle i64 %col.end, %N
  %b.unit = icmp eq i64 %sbn, 1
  %b.vec = and i1 %b.whole, %b.unit
  br i1 %b.vec, label %pack.b.vec, label %pack.b.any
pack.b.vec:
  store i64 0, ptr %bkv.slot
  br label %bkv.cond
bkv.cond:
  %bkv = load i64, ptr %bkv.slot
  %bkv.more = icmp ult i64 %bkv, %K
  br i1 %bkv.more, label %bkv.body, label %bkv.done
bkv.body:
  %bk.off = mul i64 %bkv, %sbk
  %bk.base = add i64 %bk.off, %col0
  %pk.k0.1 = and i64 %bkv, -256
  %pk.kk.1 = and i64 %bkv, 255
  %pk.left.1 = sub i64 %K, %pk.k0.1
  %pk.kc.1 = call i64 @llvm.umin.i64(i64 %pk.left.1, i64 256)
  %pk.s0.1 = mul i64 %pk.k0.1, %colp
  %pk.s1.1 = mul i64 %b.u, %pk.kc.1
  %pk.s2.1 = add i64 %pk.s0.1, %pk.s1.1
  %pk.s3.1 = add i64 %pk.s2.1, %pk.kk.1
  %pk.at.1 = mul i64 %pk.s3.1, 32
  %b.at = add i64 %bk.base, 0
  %b.ptr = getelementptr inbounds float, ptr %b.src, i64 %b.at
  %b.x = load <16 x float>, ptr %b.ptr, align 4
  %b.d = add i64 %pk.at.1, 0
  %b.dp = getelementptr inbounds float, ptr %b.dst, i64 %b.d
  store <16 x float> %b.x, ptr %b.dp, align 4
  %b.at.1 = add i64 %bk.base, 16
  %b.ptr.1 = getelementptr inbounds float, ptr %b.src, i64 %b.at.1
  %b.x.1 = load <16 x float>, ptr %b.ptr.1, align 4
  %b.d.1 = add i64 %pk.at.1, 16
  %b.dp.1 = getelementptr inbounds float, ptr %b.dst, i64 %b.d.1
  store <16 x float> %b.x.1, ptr %b.dp.1, align 4
  %bkv.next = add i64 %bkv, 1
  store i64 %bkv.next, ptr %bkv.slot
  br label %bkv.cond
bkv.done:
  br label %pack.next
pack.b.any:
  ; any other B: one column at a time (those past N read column N - 1 and store +0)
  store i64 0, ptr %bc.slot
  br label %bc.cond
bc.cond:
  %bc = load i64, ptr %bc.slot
  %bc.more = icmp ult i64 %bc, 32
  br i1 %bc.more, label %bc.body, label %bc.done
bc.body:
  %col = add i64 %col0, %bc
  %col.in = icmp slt i64 %col, %N
  %col.c = select i1 %col.in, i64 %col, i64 %N1
  %col.off = mul i64 %col.c, %sbn
  store i64 0, ptr %bk.slot
  br label %bk.cond
bk.cond:
  %bk = load i64, ptr %bk.slot
  %bk.more = icmp ult i64 %bk, %K
  br i1 %bk.more, label %bk.body, label %bk.done
bk.body:
  %bk.off.1 = mul i64 %bk, %sbk
  %b.at.2 = add i64 %col.off, %bk.off.1
  %b.ptr.2 = getelementptr inbounds float, ptr %b.src, i64 %b.at.2
  %b.x.2 = load float, ptr %b.ptr.2, align 4
  %b.v = select i1 %col.in, float %b.x.2, float 0.0
  %pk.k0.2 = and i64 %bk, -256
  %pk.kk.2 = and i64 %bk, 255
  %pk.left.2 = sub i64 %K, %pk.k0.2
  %pk.kc.2 = call i64 @llvm.umin.i64(i64 %pk.left.2, i64 256)
  %pk.s0.2 = mul i64 %pk.k0.2, %colp
  %pk.s1.2 = mul i64 %b.u, %pk.kc.2
  %pk.s2.2 = add i64 %pk.s0.2, %pk.s1.2
  %pk.s3.2 = add i64 %pk.s2.2, %pk.kk.2
  %pk.at.2 = mul i64 %pk.s3.2, 32
  %b.d.2 = add i64 %pk.at.2, %bc
  %b.dp.2 = getelementptr inbounds float, ptr %b.dst, i64 %b.d.2
  store float %b.v, ptr %b.dp.2, align 4
  %bk.next = add i64 %bk, 1
  store i64 %bk.next, ptr %bk.slot
  br label %bk.cond
bk.done:
  %bc.next = add i64 %bc, 1
  store i64 %bc.next, ptr %bc.slot
  br label %bc.cond
bc.done:
  br label %pack.next
pack.next:
  %u.next = add i64 %u, 1
  store i64 %u.next, ptr %u.slot
  br label %u.cond
u.done:
  ret void
}

; the second pass: blocks [begin, end) of outputs
define void @cm1_matmul_bias_gelu(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %scratch = alloca [49152 x float], align 64
  %t.slot = alloca i64
  %c.slot = alloca i64
  %kb.slot = alloca i64
  %jj.slot = alloca i64
  %ii.slot = alloca i64
  %pi.slot = alloca i64
  %pj.slot = alloca i64
  %ti.slot = alloca i64
  %tj.slot = alloca i64
  %n.slot = alloca i64
  %pair.slot = alloca i64
  %ei.slot = alloca i64
  %ej.slot = alloca i64
  %ep.epv3.in0 = alloca <16 x float>, align 64
  %ep.epv3.out = alloca <16 x float>, align 64
  ; parameters (host_plan.hpp, kProductHeaderFields), then the epilogue's (pack_params)
  %Ap.at = getelementptr inbounds i8, ptr %p, i64 16
  %Ap = load ptr, ptr %Ap.at, align 8
  %Bp.at = getelementptr inbounds i8, ptr %p, i64 24
  %Bp = load ptr, ptr %Bp.at, align 8
  %P.at = getelementptr inbounds i8, ptr %p, i64 32
  %P = load ptr, ptr %P.at, align 8
  %M.at = getelementptr inbounds i8, ptr %p, i64 40
  %M = load i64, ptr %M.at, align 8
  %N.at = getelementptr inbounds i8, ptr %p, i64 48
  %N = load i64, ptr %N.at, align 8
  %K.at = getelementptr inbounds i8, ptr %p, i64 56
  %K = load i64, ptr %K.at, align 8
  %rb.at = getelementptr inbounds i8, ptr %p, i64 96
  %rb = load i64, ptr %rb.at, align 8
  %cb.at = getelementptr inbounds i8, ptr %p, i64 104
  %cb = load i64, ptr %cb.at, align 8
  %rowp.at = getelementptr inbounds i8, ptr %p, i64 112
  %rowp = load i64, ptr %rowp.at, align 8
  %colp.at = getelementptr inbounds i8, ptr %p, i64 120
  %colp = load i64, ptr %colp.at, align 8
  %ep.in0.at = getelementptr inbounds i8, ptr %p, i64 128
  %ep.in0 = load ptr, ptr %ep.in0.at, align 8                                ; input 0 "accumulators" float32, contiguous (test_llvm_golden.cpp:145)
  %ep.in1.at = getelementptr inbounds i8, ptr %p, i64 136
  %ep.in1 = load ptr, ptr %ep.in1.at, align 8                                ; input 1 "bias" float32, row broadcast (test_llvm_golden.cpp:144)
  %ep.out0.at = getelementptr inbounds i8, ptr %p, i64 144
  %ep.out0 = load ptr, ptr %ep.out0.at, align 8                              ; output 0, contiguous
  %ep.n.at = getelementptr inbounds i8, ptr %p, i64 152
  %ep.n = load i32, ptr %ep.n.at, align 4                                    ; elements of the iteration space
  %ep.n.i64 = sext i32 %ep.n to i64
  %ep.ext1.at = getelementptr inbounds i8, ptr %p, i64 156
  %ep.ext1 = load i32, ptr %ep.ext1.at, align 4                              ; extent of dimension 1
  %ep.ext1.i64 = sext i32 %ep.ext1 to i64
  %K.mr = mul i64 %K, 6
  %K.nr = mul i64 %K, 32
  %chunks.k = add i64 %K, 8191
  %chunks = udiv i64 %chunks.k, 8192
  %many = icmp ugt i64 %chunks, 1
  %nch = select i1 %many, i64 %chunks, i64 1                                 ; K = 0: one empty chunk, every output +0
  %MN = mul i64 %M, %N
  %plane = mul i64 1, %MN                                                    ; elements of one chunk's partials
  %per = mul i64 %rb, %cb
  store i64 %begin, ptr %t.slot
  br label %t.cond
t.cond:
  %t = load i64, ptr %t.slot
  %t.more = icmp ult i64 %t, %end
  br i1 %t.more, label %t.body, label %t.done
t.body:
  %batch = udiv i64 %t, %per
  %rem = urem i64 %t, %per
  %ib = udiv i64 %rem, %cb
  %jb = urem i64 %rem, %cb
  %i0 = mul i64 %ib, 96
  %j0 = mul i64 %jb, 512
  %m.left = sub i64 %M, %i0
  %n.left = sub i64 %N, %j0
  %mb = call i64 @llvm.umin.i64(i64 %m.left, i64 96)
  %nb = call i64 @llvm.umin.i64(i64 %n.left, i64 512)
  %ipn.x = add i64 %mb, 5
  %ipn = udiv i64 %ipn.x, 6
  %jpn.x = add i64 %nb, 31
  %jpn = udiv i64 %jpn.x, 32
  %a.base = getelementptr inbounds float, ptr %Ap, i64 0                     ; the batch entry's A panels
  %a.p0 = mul i64 %ib, 16                                                    ; the block's first A panel
  %b.base = getelementptr inbounds float, ptr %Bp, i64 0                     ; the batch entry's B panels
  %b.p0 = mul i64 %jb, 16                                                    ; the block's first B panel
  %b.m = mul i64 %batch, %M
  %b.mi = add i64 %b.m, %i0
  %out0 = mul i64 %b.mi, %N
  %out00 = add i64 %out0, %j0                                                ; the block's first output, flat
  ; the chunks of 8192 values of k, each in K steps of 256
  store i64 0, ptr %c.slot
  br label %c.cond
c.cond:
  %c = load i64, ptr %c.slot
  %c.more = icmp ult i64 %c, %nch
  br i1 %c.more, label %c.body, label %c.done
c.body:
  %k0 = mul i64 %c, 8192
  %kend.x = add i64 %k0, 8192
  %c1 = call i64 @llvm.umin.i64(i64 %K, i64 %kend.x)
  store i64 %k0, ptr %kb.slot
  br label %kb.cond
kb.cond:
  %kb = load i64, ptr %kb.slot
  %kb.first = icmp eq i64 %kb, %k0
  %kb.left = icmp ult i64 %kb, %c1
  %kb.more = or i1 %kb.first, %kb.left
  br i1 %kb.more, label %kb.body, label %kb.done
kb.body:
  %kc.x = sub i64 %c1, %kb
  %kc = call i64 @llvm.umin.i64(i64 %kc.x, i64 256)
  %start = icmp eq i64 %kb, %k0                                              ; the chunk's first K step: from +0
  store i64 0, ptr %jj.slot
  br label %jj.cond
jj.cond:
  %jj = load i64, ptr %jj.slot
  %jj.more = icmp ult i64 %jj, %jpn
  br i1 %jj.more, label %jj.body, label %jj.done
jj.body:
  %jp = add i64 %b.p0, %jj
  %pk.s0 = mul i64 %kb, %colp
  %pk.s1 = mul i64 %jp, %kc
  %pk.s2 = add i64 %pk.s0, %pk.s1
  %pk.at = mul i64 %pk.s2, 32
  %bptr = getelementptr inbounds float, ptr %b.base, i64 %pk.at
  %co = mul i64 %jj, 32
  store i64 0, ptr %ii.slot
  br label %ii.cond
ii.cond:
  %ii = load i64, ptr %ii.slot
  %ii.more = icmp ult i64 %ii, %ipn
  br i1 %ii.more, label %ii.body, label %ii.done
ii.body:
  %ip = add i64 %a.p0, %ii
  %pk.s0.1 = mul i64 %kb, %rowp
  %pk.s1.1 = mul i64 %ip, %kc
  %pk.s2.1 = add i64 %pk.s0.1, %pk.s1.1
  %pk.at.1 = mul i64 %pk.s2.1, 6
  %aptr = getelementptr inbounds float, ptr %a.base, i64 %pk.at.1
  %cr = mul i64 %ii, 3072
  %cc = add i64 %cr, %co
  %cptr = getelementptr inbounds float, ptr %scratch, i64 %cc
  call void @cm1_matmul_bias_gelu_micro(ptr %aptr, ptr %bptr, ptr %cptr, i64 512, i64 %kc, i1 %start) ; one micro tile of the block
  %ii.next = add i64 %ii, 1
  store i64 %ii.next, ptr %ii.slot
  br label %ii.cond
ii.done:
  %jj.next = add i64 %jj, 1
  store i64 %jj.next, ptr %jj.slot
  br label %jj.cond
jj.done:
  %kb.next = add i64 %kb, 256
  store i64 %kb.next, ptr %kb.slot
  br label %kb.cond
kb.done:
  br i1 %many, label %keep, label %kept
keep:
  %c.plane = mul i64 %c, %plane
  store i64 0, ptr %pi.slot
  br label %pi.cond
pi.cond:
  %pi = load i64, ptr %pi.slot
  %pi.more = icmp ult i64 %pi, %mb
  br i1 %pi.more, label %pi.body, label %pi.done
pi.body:
  %p.ro = mul i64 %pi, %N
  %p.r1 = add i64 %p.ro, %out00
  %p.r2 = add i64 %p.r1, %c.plane
  %s.ro = mul i64 %pi, 512
  store i64 0, ptr %pj.slot
  br label %pj.cond
pj.cond:
  %pj = load i64, ptr %pj.slot
  %pj.more = icmp ult i64 %pj, %nb
  br i1 %pj.more, label %pj.body, label %pj.done
pj.body:
  %s.at = add i64 %s.ro, %pj
  %s.ptr = getelementptr inbounds float, ptr %scratch, i64 %s.at
  %s.x = load float, ptr %s.ptr, align 4
  %p.at = add i64 %p.r2, %pj
  %p.ptr = getelementptr inbounds float, ptr %P, i64 %p.at
  store float %s.x, ptr %p.ptr, align 4                                      ; chunk c's partial
  %pj.next = add i64 %pj, 1
  store i64 %pj.next, ptr %pj.slot
  br label %pj.cond
pj.done:
  %pi.next = add i64 %pi, 1
  store i64 %pi.next, ptr %pi.slot
  br label %pi.cond
pi.done:
  br label %kept
kept:
  %c.next = add i64 %c, 1
  store i64 %c.next, ptr %c.slot
  br label %c.cond
c.done:
  br i1 %many, label %tree, label %treed
tree:
  store i64 0, ptr %ti.slot
  br label %ti.cond
ti.cond:
  %ti = load i64, ptr %ti.slot
  %ti.more = icmp ult i64 %ti, %mb
  br i1 %ti.more, label %ti.body, label %ti.done
ti.body:
  %t.ro = mul i64 %ti, %N
  %t.r1 = add i64 %t.ro, %out00
  %t.so = mul i64 %ti, 512
  store i64 0, ptr %tj.slot
  br label %tj.cond
tj.cond:
  %tj = load i64, ptr %tj.slot
  %tj.more = icmp ult i64 %tj, %nb
  br i1 %tj.more, label %tj.body, label %tj.done
tj.body:
  %t.e = add i64 %t.r1, %tj
  store i64 %nch, ptr %n.slot
  br label %lvl.cond
lvl.cond:
  %lvl = load i64, ptr %n.slot
  %lvl.more = icmp ugt i64 %lvl, 1
  br i1 %lvl.more, label %lvl.body, label %lvl.done
lvl.body:
  %n1 = sub i64 %lvl, 1
  store i64 0, ptr %pair.slot
  br label %pair.cond
pair.cond:
  %pair = load i64, ptr %pair.slot
  %pair.more = icmp ult i64 %pair, %n1
  br i1 %pair.more, label %pair.body, label %pair.done
pair.body:
  %k1 = add i64 %pair, 1
  %h = lshr i64 %pair, 1
  %t.o = mul i64 %pair, %plane
  %t.a = add i64 %t.o, %t.e
  %t.ptr = getelementptr inbounds float, ptr %P, i64 %t.a
  %l = load float, ptr %t.ptr, align 4
  %t.o.1 = mul i64 %k1, %plane
  %t.a.1 = add i64 %t.o.1, %t.e
  %t.ptr.1 = getelementptr inbounds float, ptr %P, i64 %t.a.1
  %r = load float, ptr %t.ptr.1, align 4
  %pair.sum = fadd float %l, %r                                              ; (0, 1), (2, 3), ...: one rounding each
  %t.o.2 = mul i64 %h, %plane
  %t.a.2 = add i64 %t.o.2, %t.e
  %t.ptr.2 = getelementptr inbounds float, ptr %P, i64 %t.a.2
  store float %pair.sum, ptr %t.ptr.2, align 4
  %pair.next = add i64 %pair, 2
  store i64 %pair.next, ptr %pair.slot
  br label %pair.cond
pair.done:
  %odd = trunc i64 %lvl to i1
  br i1 %odd, label %carry, label %carried
carry:
  %h.1 = lshr i64 %n1, 1
  %t.o.3 = mul i64 %n1, %plane
  %t.a.3 = add i64 %t.o.3, %t.e
  %t.ptr.3 = getelementptr inbounds float, ptr %P, i64 %t.a.3
  %last = load float, ptr %t.ptr.3, align 4                                  ; an odd last partial, carried up unchanged
  %t.o.4 = mul i64 %h.1, %plane
  %t.a.4 = add i64 %t.o.4, %t.e
  %t.ptr.4 = getelementptr inbounds float, ptr %P, i64 %t.a.4
  store float %last, ptr %t.ptr.4, align 4
  br label %carried
carried:
  %n2 = add i64 %lvl, 1
  %lvl.next = lshr i64 %n2, 1
  store i64 %lvl.next, ptr %n.slot
  br label %lvl.cond
lvl.done:
  %t.o.5 = mul i64 0, %plane
  %t.a.5 = add i64 %t.o.5, %t.e
  %t.ptr.5 = getelementptr inbounds float, ptr %P, i64 %t.a.5
  %root = load float, ptr %t.ptr.5, align 4
  %s.at.1 = add i64 %t.so, %tj
  %s.ptr.1 = getelementptr inbounds float, ptr %scratch, i64 %s.at.1
  store float %root, ptr %s.ptr.1, align 4
  %tj.next = add i64 %tj, 1
  store i64 %tj.next, ptr %tj.slot
  br label %tj.cond
tj.done:
  %ti.next = add i64 %ti, 1
  store i64 %ti.next, ptr %ti.slot
  br label %ti.cond
ti.done:
  br label %treed
treed:
  ; the epilogue on the final accumulators: vectors of lanes, then one element at a time
  store i64 0, ptr %ei.slot
  br label %ei.cond
ei.cond:
  %ei = load i64, ptr %ei.slot
  %ei.more = icmp ult i64 %ei, %mb
  br i1 %ei.more, label %ei.body, label %ei.done
ei.body:
  %e.ro = mul i64 %ei, %N
  %e.flat = add i64 %e.ro, %out00
  %e.so = mul i64 %ei, 512
  store i64 0, ptr %ej.slot
  br label %ej.w16.cond
ej.w16.cond:
  %ej.w16 = load i64, ptr %ej.slot
  %ej.w16.next = add i64 %ej.w16, 16
  %ej.w16.more = icmp ule i64 %ej.w16.next, %nb                              ; a whole step of 16 left
  br i1 %ej.w16.more, label %ej.w16.body, label %ej.w16.done
ej.w16.body:
  %e.at = add i64 %e.so, %ej.w16
  %e.ptr = getelementptr inbounds float, ptr %scratch, i64 %e.at
  %acc = load <16 x float>, ptr %e.ptr, align 4                              ; the final accumulators
  %e.f = add i64 %e.flat, %ej.w16
  %ep.j = urem i64 %e.f, %ep.ext1.i64
  %ep.r = udiv i64 %e.f, %ep.ext1.i64
  %ep.epv1.p = getelementptr inbounds float, ptr %ep.in1, i64 %ep.j
  %ep.epv1.m = load <16 x float>, ptr %ep.epv1.p, align 4                    ; load in1: "bias" float32 (row broadcast, test_llvm_golden.cpp:144)
  %ep.epv2 = fadd <16 x float> %acc, %ep.epv1.m                              ; add (test_llvm_golden.cpp:145)
  store <16 x float> %ep.epv2, ptr %ep.epv3.in0, align 64
  call void @loom_gelu_f32_v(ptr %ep.epv3.in0, ptr %ep.epv3.out, i64 16)     ; gelu (test_llvm_golden.cpp:145)
  %ep.epv3 = load <16 x float>, ptr %ep.epv3.out, align 64
  %ep.out0.p = getelementptr inbounds float, ptr %ep.out0, i64 %e.f
  store <16 x float> %ep.epv3, ptr %ep.out0.p, align 4                       ; store out0 (float32)
  store i64 %ej.w16.next, ptr %ej.slot
  br label %ej.w16.cond
ej.w16.done:
  br label %ej.tail.cond
ej.tail.cond:
  %ej.tail = load i64, ptr %ej.slot
  %ej.tail.next = add i64 %ej.tail, 1
  %ej.tail.more = icmp ule i64 %ej.tail.next, %nb                            ; an element left
  br i1 %ej.tail.more, label %ej.tail.body, label %ej.tail.done
ej.tail.body:
  %e.at.1 = add i64 %e.so, %ej.tail
  %e.ptr.1 = getelementptr inbounds float, ptr %scratch, i64 %e.at.1
  %acc.1 = load float, ptr %e.ptr.1, align 4                                 ; the final accumulators
  %e.f.1 = add i64 %e.flat, %ej.tail
  %ep.j.1 = urem i64 %e.f.1, %ep.ext1.i64
  %ep.r.1 = udiv i64 %e.f.1, %ep.ext1.i64
  %ep.epv1.p.1 = getelementptr inbounds float, ptr %ep.in1, i64 %ep.j.1
  %ep.epv1.m.1 = load float, ptr %ep.epv1.p.1, align 4                       ; load in1: "bias" float32 (row broadcast, test_llvm_golden.cpp:144)
  %ep.epv2.1 = fadd float %acc.1, %ep.epv1.m.1                               ; add (test_llvm_golden.cpp:145)
  %ep.epv3.1 = call float @loom_gelu_f32(float %ep.epv2.1)                   ; gelu (test_llvm_golden.cpp:145)
  %ep.out0.p.1 = getelementptr inbounds float, ptr %ep.out0, i64 %e.f.1
  store float %ep.epv3.1, ptr %ep.out0.p.1, align 4                          ; store out0 (float32)
  store i64 %ej.tail.next, ptr %ej.slot
  br label %ej.tail.cond
ej.tail.done:
  %ei.next = add i64 %ei, 1
  store i64 %ei.next, ptr %ei.slot
  br label %ei.cond
ei.done:
  %t.next = add i64 %t, 1
  store i64 %t.next, ptr %t.slot
  br label %t.cond
t.done:
  ret void
}

declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)
declare i64 @llvm.umin.i64(i64, i64)
declare float @loom_gelu_f32(float) nounwind willreturn memory(none)
declare void @loom_gelu_f32_v(ptr, ptr, i64) nounwind

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
